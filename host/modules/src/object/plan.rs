//! From a `DecisionModule` to a [`ControllerPlan`]: check the spec as
//! guests.yaml is checked, fetch every module it names, and compose what
//! serves, shadows and backs up.

use futures::FutureExt;
use rekon_runtime::{Limits, World};

use crate::config::{Mode, Settings};
use crate::object::fetch::Fetcher;
use crate::object::resource::{DecisionModule, DecisionModuleSpec, ModuleSource, RolledBackStatus};
use crate::refusal::{Refusal, RefusalReason};
use crate::source::{ControllerPlan, ModuleFile, PlannedModules};

/// The world an object names, or why it names none.
pub fn world_of(spec: &DecisionModuleSpec) -> Result<World, Refusal> {
    World::named(&spec.world).ok_or_else(|| {
        let known: Vec<String> = World::dedicated().map(|w| w.name().to_string()).collect();
        Refusal::new(
            RefusalReason::WrongWorld,
            format!(
                "spec.world: `{}` is not a world of this host (it has {})",
                spec.world,
                known.join(", ")
            ),
        )
    })
}

/// Checks `object`'s spec (what serde cannot check) without fetching anything.
pub fn validate(object: &DecisionModule, max_memory_mib: usize) -> Result<World, Refusal> {
    let spec = &object.spec;
    let world = world_of(spec)?;
    settings(spec)
        .validate(max_memory_mib)
        .map_err(|(field, message)| {
            Refusal::new(
                RefusalReason::InvalidSpec,
                format!("spec.{field}: {message}"),
            )
        })?;
    Ok(world)
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
