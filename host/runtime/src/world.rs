//! The worlds a guest can implement, known at run time by name or by exports.
//!
//! The list comes from the contract ([`rekon_contract::visit_worlds`]); each
//! entry carries the world's names and its generic operations as function
//! pointers, so loading, the module manager and the CLI never name a world.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::LazyLock;

use rekon_contract::{BindWorld, ContractVersion, WorldVisitor};
use serde_json::Value;
use wasmtime::component::InstancePre;

use crate::error::RuntimeError;
use crate::guest::{Bound, GuestPre};
use crate::state::DecisionState;

/// What the runtime knows of one world, without its type.
struct WorldInfo {
    name: &'static str,
    interface: &'static str,
    functions: &'static [&'static str],
    generic: bool,
    versions: &'static [&'static ContractVersion],
    bind: fn(&str, InstancePre<DecisionState>) -> Option<wasmtime::Result<Bound>>,
    decide_json: fn(&GuestPre, &str, Value) -> Result<Value, JsonDecisionError>,
    decision_json: fn(&str, Value) -> Result<Value, serde_json::Error>,
}

impl WorldInfo {
    fn of<W: BindWorld>() -> Self {
        Self {
            name: W::NAME,
            interface: W::EXPORT,
            functions: W::FUNCTIONS,
            generic: W::GENERIC,
            versions: W::VERSIONS,
            bind: Bound::new::<W>,
            decide_json: decide_json::<W>,
            decision_json: |function, value| {
                W::decision_of(function, value).map(|d| W::decision_value(&d))
            },
        }
    }
}

static WORLDS: LazyLock<Vec<WorldInfo>> = LazyLock::new(|| {
    struct Collect(Vec<WorldInfo>);
    impl WorldVisitor for Collect {
        fn visit<W: BindWorld>(&mut self) {
            self.0.push(WorldInfo::of::<W>());
        }
    }
    let mut all = Collect(Vec::new());
    rekon_contract::visit_worlds(&mut all);
    all.0
});

/// A controller world of `rekon:reconcile`.
#[derive(Clone, Copy)]
pub struct World(&'static WorldInfo);

/// A decision through [`World::decide_json`] that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum JsonDecisionError {
    #[error("not a valid `{function}` input: {source}")]
    Input {
        function: String,
        source: serde_json::Error,
    },
    #[error(transparent)]
    Decision(#[from] RuntimeError),
}

impl World {
    /// Every world, in the contract's order.
    pub fn all() -> impl Iterator<Item = World> {
        WORLDS.iter().map(World)
    }

    /// The worlds of the built-in controllers: one module each (all but the
    /// generic `controller` world, whose every module is a controller).
    pub fn dedicated() -> impl Iterator<Item = World> {
        World::all().filter(|w| !w.is_generic())
    }

    /// Whether each module of this world is a controller of its own.
    pub fn is_generic(self) -> bool {
        self.0.generic
    }

    /// The world called `name` (`pvc-protection`).
    pub fn named(name: &str) -> Option<World> {
        World::all().find(|w| w.name() == name)
    }

    /// The world of contract type `W`.
    pub fn of<W: BindWorld>() -> World {
        World::named(W::NAME).expect("every bound world is listed by visit_worlds")
    }

    /// The WIT world name, without package or version.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// The exported decider interface, without package or version.
    pub fn interface(self) -> &'static str {
        self.0.interface
    }

    /// The exported decision functions, by WIT name.
    pub fn functions(self) -> &'static [&'static str] {
        self.0.functions
    }

    /// The interface a component of this world exports in `version`; `None`
    /// when the world is not part of that version.
    pub fn export(self, version: &ContractVersion) -> Option<String> {
        self.0
            .versions
            .iter()
            .any(|v| v.version == version.version)
            .then(|| version.export(self.interface()))
    }

    /// Binds a component exporting this world at `version`.
    pub(crate) fn bind(
        self,
        version: &str,
        pre: InstancePre<DecisionState>,
    ) -> Option<wasmtime::Result<Bound>> {
        (self.0.bind)(version, pre)
    }

    /// Decides `input` (the serde form of `function`'s input) with `guest`, a
    /// guest of this world; returns the decision's serde form. `rekon eval`,
    /// `rekon test`.
    pub fn decide_json(
        self,
        guest: &GuestPre,
        function: &str,
        input: Value,
    ) -> Result<Value, JsonDecisionError> {
        (self.0.decide_json)(guest, function, input)
    }

    /// `value` read as what `function` returns, in the form
    /// [`World::decide_json`] gives (omitted empty fields filled in).
    pub fn decision_json(self, function: &str, value: Value) -> Result<Value, serde_json::Error> {
        (self.0.decision_json)(function, value)
    }
}

fn decide_json<W: BindWorld>(
    guest: &GuestPre,
    function: &str,
    input: Value,
) -> Result<Value, JsonDecisionError> {
    if !W::FUNCTIONS.contains(&function) {
        return Err(guest.wrong_world(function).into());
    }
    let input = W::input_of(function, input).map_err(|source| JsonDecisionError::Input {
        function: function.to_owned(),
        source,
    })?;
    Ok(W::decision_value(&guest.decide::<W>(input)?))
}

impl PartialEq for World {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for World {}

impl Hash for World {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl fmt::Debug for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "World({})", self.name())
    }
}

impl fmt::Display for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rekon_contract::{EphemeralVolumeWorld, PvcProtectionWorld, SUPPORTED_VERSIONS};

    #[test]
    fn worlds_are_found_by_name_and_names_and_interfaces_are_unique() {
        let names: std::collections::BTreeSet<_> = World::all().map(World::name).collect();
        let interfaces: std::collections::BTreeSet<_> =
            World::all().map(World::interface).collect();
        assert_eq!(names.len(), World::all().count());
        assert_eq!(interfaces.len(), World::all().count());
        for world in World::all() {
            assert_eq!(World::named(world.name()), Some(world));
            assert!(!world.functions().is_empty(), "{world}");
        }
        assert_eq!(World::named("volume-binder"), None);
        assert_eq!(World::of::<PvcProtectionWorld>().interface(), "pvc-decider");
    }

    #[test]
    fn exports_name_the_versioned_interface() {
        for v in SUPPORTED_VERSIONS {
            for world in World::all() {
                if let Some(export) = world.export(v) {
                    assert_eq!(
                        export,
                        format!("rekon:reconcile/{}@{}", world.interface(), v.version)
                    );
                }
            }
        }
        let v = ContractVersion::find("0.2.0").unwrap();
        assert_eq!(
            World::of::<PvcProtectionWorld>().export(v).as_deref(),
            Some("rekon:reconcile/pvc-decider@0.2.0")
        );
        let volume = World::of::<EphemeralVolumeWorld>();
        assert_eq!(
            volume.export(v).as_deref(),
            Some("rekon:reconcile/volume-decider@0.2.0")
        );
        let v0_1 = ContractVersion::find("0.1.0").unwrap();
        assert_eq!(volume.export(v0_1), None);
    }
}
