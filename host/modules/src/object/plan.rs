//! From a `DecisionModule` to a [`ControllerPlan`]: check the spec as
//! guests.yaml is checked, fetch every module it names, and compose what
//! serves, shadows and backs up.

use futures::FutureExt;
use rekon_runtime::{Limits, World};

use crate::config::{Mode, Settings};
use crate::object::fetch::Fetcher;
use crate::object::resource::{DecisionModule, DecisionModuleSpec, ModuleSource};
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
    status.observed_generation == generation
        && status
            .condition(super::status::PROMOTED)
            .is_some_and(|c| c.status == "True")
}

/// Fetches and composes the plan of a validated object.
pub async fn plan(
    object: &DecisionModule,
    world: World,
    fetcher: &Fetcher,
    defaults: Limits,
) -> Result<ControllerPlan, Refusal> {
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
    let (mode, auto_promote) = if promoted {
        // The candidate won its promotion: it serves, the previous one backs it up.
        (Mode::Active, None)
    } else {
        (spec.mode, spec.auto_promote)
    };
    let plan = modules.compose(world, mode, limits);
    Ok(ControllerPlan {
        auto_rollback: spec.auto_rollback,
        auto_promote,
        ..plan
    })
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
