//! The controller modules that serve, whichever source brings them (the
//! guests directory, `DecisionModule` objects), kept in the host's
//! [`ControllerSet`]: one controller per name, an object's module taking
//! precedence over the directory's. Each has a [`Controller`] of its own, as a
//! dedicated world has: what serves, its shadow, its rollback target,
//! automatic promotion and rollback, all published into the module's slot.
//! A new publication (a new version, a shadow, a promotion, a rollback) with
//! the same description makes the host decide every primary key again; a new
//! description, or a new pin, is a new controller (the old one stops first).
//! A shadow and a rollback target describe the same controller as the version
//! serving: they decide on its inputs, and serve in its place.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use rekon_contract::ControllerWorld;
use rekon_contract::controller::{Description, Scope};
use rekon_controllers::decider::ShadowTally;
use rekon_controllers::generic::ControllerModule;
use rekon_controllers::generic::serving::ControllerSet;
use rekon_controllers::pool::ShadowPool;
use rekon_runtime::World;

use crate::config::Mode;
use crate::controller::{Controller, Preparation, Trip};
use crate::digest::ModuleDigest;
use crate::generic::{DirModules, LoadedController, Pin, load_file};
use crate::manager::Modules;
use crate::observe::ModulesObserver;
use crate::refusal::{Refusal, RefusalReason};
use crate::report::Reporter;
use crate::source::{ControllerPlan, ModuleFile};
use crate::status::ControllerStatus;
use crate::version::ModuleVersion;

/// Where a controller module comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A file of the guests directory.
    Dir,
    /// The `DecisionModule` of this name.
    Object(String),
}

struct Entry {
    origin: Origin,
    /// The description and the slot the host's controller runs.
    module: ControllerModule,
    /// Publishes into `module.slot`.
    controller: Arc<Controller>,
    instance: u64,
}

/// The controller a new description replaced.
#[derive(Debug, Clone)]
pub struct Replaced {
    /// The instance that runs until the host stopped it.
    pub instance: u64,
    pub description: Description,
}

/// What [`ControllerModules::offer`] did.
#[derive(Debug)]
pub enum Offered {
    /// The versions serve already.
    Unchanged,
    /// A new controller, replacing `replaced` when one served under the name.
    Started { replaced: Option<Box<Replaced>> },
    /// New versions of the controller serving (same description).
    Published,
    /// A directory module for a name an object serves: not served.
    Overridden,
}

/// What one module of an object's plan serves, and what it replaced.
#[derive(Debug)]
pub struct Applied {
    pub offered: Offered,
    pub description: Description,
}

/// One controller module serving, as a `DecisionModule`'s status shows it.
#[derive(Debug, Clone)]
pub struct ServingModule {
    pub status: ControllerStatus,
    pub description: Description,
    pub instance: u64,
}

/// What a `DecisionModule` naming a controller module serves: the fetched
/// modules composed as for a world (what serves, shadows and backs up), held
/// against the scope the object pins.
pub struct ControllerModulePlan {
    pub name: String,
    pub plan: ControllerPlan,
    pub scope: Scope,
}

/// The loaded versions of a plan: the serving one with its description, its
/// shadow and rollback target (describing the same controller).
pub struct Candidate {
    pub plan: ControllerPlan,
    pub serving: LoadedController,
    pub shadow: Option<Arc<ModuleVersion>>,
    pub fallback: Option<Arc<ModuleVersion>>,
}

impl Candidate {
    /// A module of the guests directory: it serves alone.
    pub fn alone(serving: LoadedController) -> Self {
        let plan = ControllerPlan {
            world: World::of::<ControllerWorld>(),
            serving: serving.file.clone(),
            shadow: None,
            fallback: None,
            mode: Mode::Active,
            limits: serving.version.limits(),
            auto_rollback: None,
            auto_promote: None,
            pinned: serving.module.pinned,
        };
        Self {
            plan,
            serving,
            shadow: None,
            fallback: None,
        }
    }
}

pub struct ControllerModules {
    set: ControllerSet,
    entries: Mutex<BTreeMap<String, Entry>>,
    /// Names an object serves (the guests directory stays off them), by object.
    claimed: Mutex<BTreeMap<String, String>>,
    /// The directory's refusals last reported (each is logged once).
    refused: Mutex<BTreeSet<String>>,
    /// What each module's [`Controller`] is made with.
    reporter: Arc<Reporter>,
    observer: Arc<dyn ModulesObserver>,
    shadow_differences_kept: usize,
    shadows: Arc<ShadowPool>,
}

impl ControllerModules {
    pub fn new(
        reporter: Arc<Reporter>,
        observer: Arc<dyn ModulesObserver>,
        shadow_differences_kept: usize,
        shadows: Arc<ShadowPool>,
    ) -> Self {
        Self {
            set: ControllerSet::default(),
            entries: Mutex::default(),
            claimed: Mutex::default(),
            refused: Mutex::default(),
            reporter,
            observer,
            shadow_differences_kept,
            shadows,
        }
    }

    pub fn set(&self) -> &ControllerSet {
        &self.set
    }

    /// Object `object` serves controller `name` from now on.
    pub fn claim(&self, name: &str, object: &str) {
        self.claimed
            .lock()
            .unwrap()
            .insert(name.to_string(), object.to_string());
    }

    /// No object serves `name` any more.
    pub fn unclaim(&self, name: &str) {
        self.claimed.lock().unwrap().remove(name);
    }

    /// Serves `candidate` from `origin`, unless it serves already or an object
    /// claims the name of a directory module. A serving version that was
    /// rolled back automatically is refused.
    pub fn offer(&self, origin: Origin, candidate: Candidate) -> Result<Offered, Refusal> {
        let Candidate {
            plan,
            serving,
            shadow,
            fallback,
        } = candidate;
        let name = serving.module.name().to_string();
        if origin == Origin::Dir && self.claimed.lock().unwrap().contains_key(&name) {
            return Ok(Offered::Overridden);
        }
        let mut entries = self.entries.lock().unwrap();
        if let Some(entry) = entries.get(&name) {
            let same_controller = entry.origin == origin
                && entry.module.pinned == serving.module.pinned
                && entry.module.checked.description == serving.module.checked.description;
            if same_controller {
                let controller = entry.controller.clone();
                let plan = match controller.prepare(plan) {
                    Preparation::Unchanged => return Ok(Offered::Unchanged),
                    Preparation::Refused(reason) => {
                        return Err(Refusal::new(RefusalReason::RolledBackBefore, reason));
                    }
                    Preparation::Load(plan) => *plan,
                };
                let trips = self.trips(&controller);
                let event = controller.commit(&plan, serving.version, shadow, fallback, &*trips);
                self.reporter.event(&event);
                self.set.published(&name);
                return Ok(Offered::Published);
            }
        }
        let replaced = entries.remove(&name).map(|old| {
            Box::new(Replaced {
                instance: old.instance,
                description: old.module.checked.description.clone(),
            })
        });
        tracing::info!(controller = %name, module = %serving.version.path().display(),
            sha256 = %serving.version.digest(), primary = %serving.module.checked.description.primary,
            restarted = replaced.is_some(), "controller module serves");
        let controller = Arc::new(Controller::for_module(
            &name,
            serving.module.slot.clone(),
            self.shadow_differences_kept,
            self.observer.clone(),
            self.shadows.clone(),
        ));
        let trips = self.trips(&controller);
        let event = controller.commit(&plan, serving.version, shadow, fallback, &*trips);
        self.reporter.event(&event);
        let instance = self.set.serve(serving.module.clone());
        entries.insert(
            name,
            Entry {
                origin,
                module: serving.module,
                controller,
                instance,
            },
        );
        Ok(Offered::Started { replaced })
    }

    /// The rollback callbacks of `controller`'s publications.
    fn trips(&self, controller: &Arc<Controller>) -> Box<dyn Fn(u64) -> Trip> {
        trips(
            self.set.clone(),
            self.reporter.clone(),
            Arc::downgrade(controller),
        )
    }

    /// Promotes every controller module's shadow whose evidence is in; the
    /// promoted version decides every key again. Whether any event happened.
    pub fn promote_due(&self) -> bool {
        let controllers: Vec<Arc<Controller>> = self
            .entries
            .lock()
            .unwrap()
            .values()
            .map(|e| e.controller.clone())
            .collect();
        let mut any = false;
        for controller in controllers {
            let trips = self.trips(&controller);
            if let Some(event) = controller.promote_due(&*trips) {
                self.reporter.event(&event);
                self.set.published(controller.name());
                any = true;
            }
        }
        any
    }

    /// Stops serving `name`; returns the instance and description that served.
    pub fn withdraw(&self, name: &str, reason: &str) -> Option<Replaced> {
        let entry = self.entries.lock().unwrap().remove(name)?;
        self.set.remove(name);
        if let Some(event) = entry.controller.withdraw(reason) {
            self.reporter.event(&event);
        }
        tracing::warn!(controller = name, reason, "controller module withdrawn");
        Some(Replaced {
            instance: entry.instance,
            description: entry.module.checked.description.clone(),
        })
    }

    /// Serves what a read of the guests directory found; stops the directory's
    /// modules whose file went (or now holds another controller). Refusals are
    /// logged once each; what served keeps serving.
    pub fn dir_loaded(&self, found: DirModules) {
        let messages: BTreeSet<String> = found.refused.iter().map(ToString::to_string).collect();
        {
            let mut reported = self.refused.lock().unwrap();
            for message in messages.difference(&reported) {
                tracing::error!(error = %message, "controller module refused");
            }
            *reported = messages;
        }
        let served: BTreeMap<PathBuf, String> = found
            .served
            .iter()
            .map(|l| (l.path.clone(), l.module.name().to_string()))
            .collect();
        for loaded in found.served {
            let path = loaded.path.clone();
            if let Err(refusal) = self.offer(Origin::Dir, Candidate::alone(loaded)) {
                tracing::error!(module = %path.display(), error = %refusal, "controller module refused");
            }
        }
        let Some(considered) = found.considered else {
            return;
        };
        let gone: Vec<(String, PathBuf)> = self
            .entries
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, e)| e.origin == Origin::Dir)
            .filter_map(|(name, e)| Some((name.clone(), e.controller.serving_path()?)))
            .filter(|(name, path)| {
                !considered.contains(path) || served.get(path).is_some_and(|n| n != name)
            })
            .collect();
        for (name, path) in gone {
            let reason = format!(
                "{} is no longer a controller module of the guests directory",
                path.display()
            );
            self.withdraw(&name, &reason);
        }
    }

    /// The last refusals of the guests directory's controller modules.
    pub fn refusals(&self) -> Vec<String> {
        self.refused.lock().unwrap().iter().cloned().collect()
    }

    /// Every version that serves or may serve (active, shadow, rollback target).
    pub fn kept_digests(&self) -> Vec<ModuleDigest> {
        self.entries
            .lock()
            .unwrap()
            .values()
            .flat_map(|e| e.controller.kept_digests())
            .collect()
    }

    pub fn serving(&self, name: &str) -> Option<ServingModule> {
        let entries = self.entries.lock().unwrap();
        let entry = entries.get(name)?;
        Some(ServingModule {
            status: entry.controller.status(),
            description: entry.module.checked.description.clone(),
            instance: entry.instance,
        })
    }

    /// The tally of the shadow deciding beside controller `name`'s serving version.
    pub fn shadow_tally(&self, name: &str) -> Option<Arc<ShadowTally>> {
        self.entries
            .lock()
            .unwrap()
            .get(name)?
            .controller
            .shadow_tally()
    }

    /// The status of every controller module serving, by name.
    pub fn status(&self) -> BTreeMap<String, ControllerStatus> {
        self.entries
            .lock()
            .unwrap()
            .iter()
            .map(|(name, e)| (name.clone(), e.controller.status()))
            .collect()
    }
}

/// The rollback callbacks of a controller module's publications: the
/// previous version serves again, and decides every key again.
fn trips(
    set: ControllerSet,
    reporter: Arc<Reporter>,
    controller: Weak<Controller>,
) -> Box<dyn Fn(u64) -> Trip> {
    Box::new(move |serial| {
        let (set, reporter, controller) = (set.clone(), reporter.clone(), controller.clone());
        Box::new(move |decisions, failures| {
            let Some(controller) = controller.upgrade() else {
                return;
            };
            let again = trips(set.clone(), reporter.clone(), Arc::downgrade(&controller));
            if let Some(event) = controller.roll_back(serial, decisions, failures, &*again) {
                reporter.event(&event);
                set.published(controller.name());
            }
        })
    })
}

/// Why `other` (the version of `field`) cannot shadow or back up `serving`:
/// it describes the controller otherwise. A shadow decides on the serving
/// version's inputs and a promotion or rollback publishes it in its place,
/// so both must describe the same controller; a new description is a new
/// version of `spec.module`.
pub fn same_controller(
    field: &str,
    serving: &Description,
    other: &Description,
) -> Result<(), Refusal> {
    let mut differ = Vec::new();
    if serving.primary != other.primary {
        differ.push("primary");
    }
    if serving.primary_fields != other.primary_fields {
        differ.push("primary fields");
    }
    if serving.watches != other.watches {
        differ.push("watches");
    }
    if serving.scope != other.scope {
        differ.push("scope");
    }
    if differ.is_empty() {
        return Ok(());
    }
    Err(Refusal::new(
        RefusalReason::WrongController,
        format!(
            "{field}: describes controller {:?} otherwise than the version serving ({} differ); \
             it decides on the serving version's inputs and serves in its place, so it must \
             describe the same controller: ship a new description as `module`",
            other.name,
            differ.join(", ")
        ),
    ))
}

impl Modules {
    /// The controller modules to run, for the host: kept current by
    /// [`Modules::reload`] and the `DecisionModule` objects.
    pub fn controller_set(&self) -> ControllerSet {
        self.controller_modules().set().clone()
    }

    /// Loads and checks `plan`'s modules off the reconcile path (each must
    /// describe controller `plan.name` within the pinned scope; a shadow and
    /// a rollback target the same controller as the serving version), then
    /// serves them for object `object`. A refusal leaves what served serving.
    pub async fn apply_controller(
        &self,
        object: &str,
        plan: ControllerModulePlan,
    ) -> Result<Applied, Refusal> {
        let modules = self.clone();
        let candidate = tokio::task::spawn_blocking(move || load_plan(&modules, plan))
            .await
            .map_err(|panic| {
                Refusal::new(
                    RefusalReason::Internal,
                    format!("loading the controller module panicked: {panic}"),
                )
            })??;
        let description = candidate.serving.module.checked.description.clone();
        let offered = self
            .controller_modules()
            .offer(Origin::Object(object.to_string()), candidate);
        self.retain_cache();
        self.refresh_status();
        Ok(Applied {
            offered: offered?,
            description,
        })
    }

    /// Object `object` serves controller `name` from now on: the guests
    /// directory no longer changes it.
    pub fn claim_controller(&self, name: &str, object: &str) {
        self.controller_modules().claim(name, object);
    }

    /// Controller `name` stops (`reason` says why); returns what served.
    pub fn withdraw_controller(&self, name: &str, reason: &str) -> Option<Replaced> {
        let withdrawn = self.controller_modules().withdraw(name, reason);
        self.retain_cache();
        self.refresh_status();
        withdrawn
    }

    /// No object serves controller `name` any more: it stops, and the guests
    /// directory serves it again if it has it.
    pub async fn release_controller(&self, name: &str, reason: &str) {
        self.controller_modules().unclaim(name);
        self.withdraw_controller(name, reason);
        if self.dir().is_some() {
            self.reload().await;
        }
    }

    /// The tally of the shadow deciding beside controller module `name`.
    pub fn controller_shadow_tally(&self, name: &str) -> Option<Arc<ShadowTally>> {
        self.controller_modules().shadow_tally(name)
    }

    /// What serves controller `name` now.
    pub fn serving_controller(&self, name: &str) -> Option<ServingModule> {
        self.controller_modules().serving(name)
    }
}

/// The spec fields a plan's serving, shadow and rollback versions come from
/// in `mode` (as [`crate::source::PlannedModules::compose`] composes them).
fn fields(mode: Mode) -> [&'static str; 3] {
    match mode {
        Mode::Active => ["spec.module", "spec.shadow", "spec.previous"],
        Mode::Shadow => ["spec.previous", "spec.module", "spec.previous"],
        Mode::Rollback => ["spec.previous", "spec.shadow", "spec.previous"],
    }
}

/// Loads every module of `plan` against its pin. Blocking.
fn load_plan(modules: &Modules, plan: ControllerModulePlan) -> Result<Candidate, Refusal> {
    let ControllerModulePlan { name, plan, scope } = plan;
    let [serving_field, shadow_field, fallback_field] = fields(plan.mode);
    let load = |field: &str, file: &ModuleFile| {
        let pin = Pin {
            name: &name,
            sha256: None,
            scope: scope.clone(),
        };
        load_file(modules.loader(), plan.limits, file, Some(pin)).map_err(|e| {
            let refusal = e.refusal();
            Refusal::new(refusal.reason, format!("{field}: {}", refusal.message))
        })
    };
    let serving = load(serving_field, &plan.serving)?;
    let described = &serving.module.checked.description;
    let shadow = match &plan.shadow {
        Some(file) => {
            let shadow = load(shadow_field, file)?;
            same_controller(shadow_field, described, &shadow.module.checked.description)?;
            Some(shadow.version)
        }
        None => None,
    };
    let fallback = match &plan.fallback {
        Some(file) => {
            let fallback = load(fallback_field, file)?;
            match same_controller(
                fallback_field,
                described,
                &fallback.module.checked.description,
            ) {
                Ok(()) => Some(fallback.version),
                // Checked, but no rollback target: it would serve another controller.
                Err(_) if plan.auto_rollback.is_none() => None,
                Err(refusal) => {
                    return Err(Refusal::new(
                        refusal.reason,
                        format!(
                            "{refusal} (autoRollback would serve it in place of the serving version)"
                        ),
                    ));
                }
            }
        }
        None => None,
    };
    Ok(Candidate {
        plan,
        serving,
        shadow,
        fallback,
    })
}

#[cfg(test)]
mod tests {
    use rekon_contract::controller::{Kind, Mapping, Watch};

    use super::*;

    fn described() -> Description {
        Description {
            name: "volume-guard".into(),
            primary: Kind::new("", "v1", "PersistentVolume"),
            primary_fields: vec!["status.phase".into()],
            ..Description::default()
        }
    }

    #[test]
    fn a_shadow_must_describe_the_controller_as_the_serving_version_does() {
        let serving = described();
        assert!(same_controller("spec.shadow", &serving, &serving.clone()).is_ok());
        let mut other = serving.clone();
        other.scope.finalizers.push("example.com/guard".into());
        other.primary_fields.push("spec.claimRef".into());
        other.watches.push(Watch {
            kind: Kind::new("", "v1", "Pod"),
            mapping: Mapping::Owner,
            fields: Vec::new(),
        });
        let refusal = same_controller("spec.shadow", &serving, &other).unwrap_err();
        assert_eq!(refusal.reason, RefusalReason::WrongController);
        assert!(
            refusal.message.starts_with(
                "spec.shadow: describes controller \"volume-guard\" otherwise than the version \
                 serving (primary fields, watches, scope differ)"
            ),
            "{refusal}"
        );
        other = serving.clone();
        other.primary = Kind::new("", "v1", "PersistentVolumeClaim");
        let refusal = same_controller("spec.previous", &serving, &other).unwrap_err();
        assert!(refusal.message.contains("(primary differ)"), "{refusal}");
    }

    #[test]
    fn each_version_of_a_plan_is_named_by_the_field_it_comes_from() {
        assert_eq!(
            fields(Mode::Active),
            ["spec.module", "spec.shadow", "spec.previous"]
        );
        assert_eq!(fields(Mode::Shadow)[..2], ["spec.previous", "spec.module"]);
        assert_eq!(fields(Mode::Rollback)[0], "spec.previous");
    }
}
