//! From a `DecisionModule` to a [`ControllerPlan`] (a built-in world) or a
//! [`ControllerModulePlan`] (a controller module): check the spec as
//! guests.yaml is checked, fetch every module it names, and compose what
//! serves, shadows and backs up.

use futures::FutureExt;
use rekon_runtime::{Limits, World};

use crate::config::{Mode, Settings};
use crate::controller_modules::ControllerModulePlan;
use crate::object::fetch::Fetcher;
use crate::object::resource::{
    DecisionModule, DecisionModuleSpec, ModuleSource, OnRemoval, RolledBackStatus,
};
use crate::refusal::{Refusal, RefusalReason};
use crate::source::{ControllerPlan, ModuleFile, PlannedModules};

/// What an object serves: a built-in world, or a controller module.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    World(World),
    /// The controller module describing itself by this name.
    Controller(String),
}

impl Target {
    /// The name one object per target serves: the world's or the controller's.
    pub fn key(&self) -> &str {
        match self {
            Target::World(world) => world.name(),
            Target::Controller(name) => name,
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::World(world) => write!(f, "world {world}"),
            Target::Controller(name) => write!(f, "controller module {name}"),
        }
    }
}

/// What an object serves, or why it names nothing this host serves.
pub fn target_of(spec: &DecisionModuleSpec) -> Result<Target, Refusal> {
    if let Some(world) = World::dedicated().find(|w| w.name() == spec.world) {
        return Ok(Target::World(world));
    }
    if rekon_controllers::generic::describe::is_dns_label(&spec.world) {
        return Ok(Target::Controller(spec.world.clone()));
    }
    let known: Vec<String> = World::dedicated().map(|w| w.name().to_string()).collect();
    Err(Refusal::new(
        RefusalReason::WrongWorld,
        format!(
            "spec.world: `{}` is neither a world of this host (it has {}) nor a controller \
             module's name (a lowercase DNS label)",
            spec.world,
            known.join(", ")
        ),
    ))
}

/// Checks `object`'s spec (what serde cannot check) without fetching anything.
pub fn validate(object: &DecisionModule, max_memory_mib: usize) -> Result<Target, Refusal> {
    let spec = &object.spec;
    let target = target_of(spec)?;
    let invalid = |field: &str, message: &str| {
        Err(Refusal::new(
            RefusalReason::InvalidSpec,
            format!("spec.{field}: {message}"),
        ))
    };
    match &target {
        Target::World(world) => {
            let only = "only a controller module's object has it";
            if spec.scope.is_some() {
                return invalid(
                    "scope",
                    &format!("{only} (world {world} has a fixed scope)"),
                );
            }
            if spec.on_removal.is_some() {
                return invalid("onRemoval", only);
            }
        }
        Target::Controller(name) => {
            if spec.scope.is_none() {
                return invalid(
                    "scope",
                    &format!(
                        "required for controller module {name:?}: the scope it may use \
                         (`rekon rbac` prints what a module declares)"
                    ),
                );
            }
        }
    }
    settings(spec)
        .validate(max_memory_mib)
        .map_err(|(field, message)| {
            Refusal::new(
                RefusalReason::InvalidSpec,
                format!("spec.{field}: {message}"),
            )
        })?;
    Ok(target)
}

/// A controller module object's removal policy.
pub fn on_removal(spec: &DecisionModuleSpec) -> OnRemoval {
    spec.on_removal.unwrap_or_default()
}

/// Fetches the modules of a validated controller module object and composes
/// them as for a world (mode, shadow, `previous`, promotion and rollback
/// records alike); loading holds each against the scope the object pins.
pub async fn plan_controller(
    object: &DecisionModule,
    name: &str,
    fetcher: &Fetcher,
    defaults: Limits,
) -> Result<(ControllerModulePlan, Option<RolledBackStatus>), Refusal> {
    let world = World::of::<rekon_contract::ControllerWorld>();
    let planned = plan(object, world, fetcher, defaults).boxed().await?;
    let plan = ControllerModulePlan {
        name: name.to_string(),
        plan: planned.plan,
        scope: object.spec.scope.clone().unwrap_or_default().to_scope(),
    };
    Ok((plan, planned.rolled_back))
}

fn settings(spec: &DecisionModuleSpec) -> Settings<'_> {
    Settings {
        deadline_ms: spec.deadline_ms,
        memory_mib: spec.memory_mib,
        mode: spec.mode,
        has_shadow: spec.shadow.is_some(),
        has_previous: spec.previous.is_some(),
        auto_rollback: spec.auto_rollback.as_ref(),
        auto_promote: spec.auto_promote.as_ref(),
    }
}

/// Whether this object's status records a promotion of its current
/// generation: the shadow then serves, also after a restart or a failover.
pub fn was_promoted(object: &DecisionModule) -> bool {
    let Some(status) = &object.status else {
        return false;
    };
    let generation = object.metadata.generation;
    status
        .condition(super::status::PROMOTED)
        .is_some_and(|c| c.status == "True" && c.observed_generation == generation)
}

/// What a plan serves, and the recorded rollback it honours.
pub struct Planned {
    pub plan: ControllerPlan,
    pub rolled_back: Option<RolledBackStatus>,
}

/// Fetches and composes the plan of a validated object. A module whose
/// digest the status records as rolled back automatically does not serve:
/// `previous` does (mode rollback), on every replica and after restarts.
pub async fn plan(
    object: &DecisionModule,
    world: World,
    fetcher: &Fetcher,
    defaults: Limits,
) -> Result<Planned, Refusal> {
    let spec = &object.spec;
    let promoted = spec.mode == Mode::Shadow && was_promoted(object);
    let module = match spec.mode {
        Mode::Rollback => None,
        _ => {
            fetch(fetcher, "spec.module", Some(&spec.module))
                .boxed()
                .await?
        }
    };
    let modules = PlannedModules {
        module,
        shadow: fetch(fetcher, "spec.shadow", spec.shadow.as_ref())
            .boxed()
            .await?,
        previous: fetch(fetcher, "spec.previous", spec.previous.as_ref())
            .boxed()
            .await?,
    };
    let limits = settings(spec).limits(defaults);
    let (mut mode, auto_promote) = if promoted {
        // The candidate won its promotion: it serves, the previous one backs it up.
        (Mode::Active, None)
    } else {
        (spec.mode, spec.auto_promote)
    };
    let rolled_back = rolled_back_record(object, &modules, mode)?;
    if rolled_back.is_some() {
        mode = Mode::Rollback;
    }
    let plan = modules.compose(world, mode, limits);
    Ok(Planned {
        plan: ControllerPlan {
            auto_rollback: spec.auto_rollback,
            auto_promote,
            ..plan
        },
        rolled_back,
    })
}

/// The status's rollback record when it names the module that would serve.
fn rolled_back_record(
    object: &DecisionModule,
    modules: &PlannedModules,
    mode: Mode,
) -> Result<Option<RolledBackStatus>, Refusal> {
    let serving = match mode {
        Mode::Active => modules.module.as_ref(),
        // The previous version serves; a shadow never served.
        Mode::Shadow | Mode::Rollback => None,
    };
    let record = object.status.as_ref().and_then(|s| s.rolled_back.as_ref());
    let (Some(file), Some(record)) = (serving, record) else {
        return Ok(None);
    };
    if file.digest.to_string() != record.digest {
        return Ok(None);
    }
    if modules.previous.is_none() {
        return Err(Refusal::new(
            RefusalReason::RolledBackBefore,
            format!(
                "spec.module: {} (sha256 {}) was rolled back automatically at {} and no `previous` \
                 is named to serve instead; name a new build, or `previous`",
                file.path.display(),
                record.digest,
                record.at
            ),
        ));
    }
    Ok(Some(record.clone()))
}

async fn fetch(
    fetcher: &Fetcher,
    field: &str,
    source: Option<&ModuleSource>,
) -> Result<Option<ModuleFile>, Refusal> {
    match source {
        Some(source) => fetcher.fetch(field, source).boxed().await.map(Some),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(spec: serde_json::Value) -> DecisionModule {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "rekon.dev/v1alpha1", "kind": "DecisionModule",
            "metadata": {"name": "m"}, "spec": spec,
        }))
        .unwrap()
    }

    fn refusal(spec: serde_json::Value) -> String {
        let refusal = validate(&object(spec), 256).unwrap_err();
        assert_eq!(refusal.reason, RefusalReason::InvalidSpec);
        refusal.message
    }

    #[test]
    fn a_name_that_is_no_world_is_a_controller_module_which_needs_a_scope() {
        let module = serde_json::json!({"configMap": {"namespace": "a", "name": "b", "key": "c"}});
        let target = validate(
            &object(serde_json::json!({"world": "volume-guard", "module": module, "scope": {}})),
            256,
        )
        .unwrap();
        assert_eq!(target, Target::Controller("volume-guard".into()));
        assert!(
            refusal(serde_json::json!({"world": "volume-guard", "module": module}))
                .starts_with("spec.scope: required for controller module \"volume-guard\"")
        );
        assert!(
            refusal(serde_json::json!({"world": "pvc-protection", "module": module, "scope": {}}))
                .starts_with("spec.scope: only a controller module's object has it")
        );
        let wrong = validate(
            &object(serde_json::json!({"world": "Not_A_Name", "module": module})),
            256,
        )
        .unwrap_err();
        assert_eq!(wrong.reason, RefusalReason::WrongWorld);
    }

    #[test]
    fn a_controller_module_takes_a_shadow_promotion_and_rollback_as_a_world_does() {
        let module = serde_json::json!({"configMap": {"namespace": "a", "name": "b", "key": "c"}});
        let spec = serde_json::json!({
            "world": "volume-guard", "module": module, "previous": module, "scope": {},
            "mode": "shadow",
            "autoPromote": {"minDecisions": 5, "maxDifferences": 0},
            "autoRollback": {"maxFailureFraction": 0.5, "minDecisions": 5},
        });
        assert_eq!(
            validate(&object(spec.clone()), 256).unwrap(),
            Target::Controller("volume-guard".into())
        );
        let mut active = spec.clone();
        active["mode"] = "active".into();
        active["shadow"] = module.clone();
        active.as_object_mut().unwrap().remove("autoPromote");
        assert!(validate(&object(active), 256).is_ok());
        // What makes no sense for a world makes none for a controller module.
        let mut both = spec;
        both["shadow"] = module;
        assert!(refusal(both).starts_with("spec.shadow: in mode shadow, `module` is the shadow"));
    }
}
