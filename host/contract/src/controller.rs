//! `rekon:reconcile/controller` (0.3.0 on): a controller as a module. The module
//! describes itself (`describe`, called once at load) and decides one primary
//! key at a time (`decide`). The whole world in one module: its marker type, its
//! bindings and their binding; `crate::visit_worlds` lists it.

use std::sync::Arc;

pub use rekon_guest::controller::*;
use serde::de::Error as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasmtime::Store;
use wasmtime::component::InstancePre;

use crate::binding::{BindWorld, Bound, CallError, WorldBinding};
use crate::bindings::ContractVersion;
use crate::world::WitWorld;

/// The world's marker type.
#[derive(Debug, Clone, Copy, Default)]
pub struct ControllerWorld;

/// What the host asks of a controller module.
// One value per call, moved straight into the guest: boxing buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControllerInput {
    /// `describe`: what the module is.
    Describe,
    /// `decide`: one decision for one primary key.
    Decide(Input),
}

/// What a controller module answered (the same variant as the question).
// One value per call, moved straight out of the guest: boxing buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControllerDecision {
    Describe(Description),
    Decide(Decision),
}

impl WitWorld for ControllerWorld {
    const NAME: &'static str = "controller";
    const EXPORT: &'static str = "controller-decider";
    const FUNCTIONS: &'static [&'static str] = &["decide", "describe"];
    const GENERIC: bool = true;
    type Input = ControllerInput;
    type Decision = ControllerDecision;

    fn function(input: &ControllerInput) -> &'static str {
        match input {
            ControllerInput::Describe => "describe",
            ControllerInput::Decide(_) => "decide",
        }
    }

    fn input_of(function: &str, value: Value) -> Result<ControllerInput, serde_json::Error> {
        match function {
            "decide" => serde_json::from_value(value).map(ControllerInput::Decide),
            "describe" => Ok(ControllerInput::Describe),
            other => Err(serde_json::Error::custom(format!(
                "controller has no function `{other}`"
            ))),
        }
    }

    fn decision_of(function: &str, value: Value) -> Result<ControllerDecision, serde_json::Error> {
        match function {
            "decide" => serde_json::from_value(value).map(ControllerDecision::Decide),
            "describe" => serde_json::from_value(value).map(ControllerDecision::Describe),
            other => Err(serde_json::Error::custom(format!(
                "controller has no function `{other}`"
            ))),
        }
    }

    fn decision_value(decision: &ControllerDecision) -> Value {
        match decision {
            ControllerDecision::Describe(d) => serde_json::to_value(d),
            ControllerDecision::Decide(d) => serde_json::to_value(d),
        }
        .expect("model values always serialise")
    }
}

/// The bindings at `rekon:reconcile@0.3.0`.
pub mod v0_3_0 {
    use super::ContractVersion;

    pub const VERSION: ContractVersion = ContractVersion { version: "0.3.0" };

    /// Exports `controller`; imports the version's `log`.
    pub mod world {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: "rekon:reconcile/controller@0.3.0",
        });
    }

    pub use world::exports::rekon::reconcile0_3_0::controller_decider;
    pub use world::rekon::reconcile0_3_0::log;
    rekon_guest::impl_controller_conversions!(controller_decider);
}

impl<T: Send + 'static> WorldBinding<ControllerWorld, T>
    for Bound<v0_3_0::world::ControllerPre<T>>
{
    fn version(&self) -> &'static ContractVersion {
        self.version
    }

    fn decide(
        &self,
        store: &mut Store<T>,
        input: ControllerInput,
    ) -> Result<ControllerDecision, CallError> {
        let guest = self
            .pre
            .instantiate(&mut *store)
            .map_err(CallError::Instantiate)?;
        let exports = guest.rekon_reconcile0_3_0_controller_decider();
        match input {
            ControllerInput::Describe => exports
                .call_describe(&mut *store)
                .map(|d| ControllerDecision::Describe(d.into())),
            ControllerInput::Decide(input) => exports
                .call_decide(&mut *store, &input.into())
                .map(|d| ControllerDecision::Decide(d.into())),
        }
        .map_err(CallError::Call)
    }
}

impl BindWorld for ControllerWorld {
    const VERSIONS: &'static [&'static ContractVersion] = &[&v0_3_0::VERSION];

    fn bind<T: Send + 'static>(
        version: &str,
        pre: InstancePre<T>,
    ) -> Option<wasmtime::Result<Arc<dyn WorldBinding<Self, T>>>> {
        (version == v0_3_0::VERSION.version).then(|| {
            v0_3_0::world::ControllerPre::new(pre).map(|pre| {
                Arc::new(Bound {
                    pre,
                    version: &v0_3_0::VERSION,
                }) as Arc<dyn WorldBinding<Self, T>>
            })
        })
    }
}
