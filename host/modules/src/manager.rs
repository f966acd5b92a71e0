//! [`Modules`]: the decision modules of every controller, loaded from the
//! guests directory and kept current by [`Modules::reload`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use rekon_controllers::decider::{Deciders, ShadowTally, Slot};
use rekon_controllers::pool::ShadowPool;
use rekon_runtime::{Engine, EngineConfig, GuestWorld, World};

use crate::cache::{CacheError, PrecompiledCache};
use crate::config::Mode;
use crate::controller::{Controller, Preparation, Trip};
use crate::controller_modules::ControllerModules;
use crate::digest::ModuleDigest;
use crate::load::{LoadError, Loader};
use crate::observe::{ModulesObserver, NoModulesObserver};
use crate::refusal::{Refusal, RefusalReason};
use crate::report::{EventTarget, Reporter};
use crate::source::{ControllerPlan, ModuleFile, SourceError, read_plan};
use crate::status::Status;
use crate::version::ModuleVersion;

#[derive(Debug, thiserror::Error)]
pub enum ModulesError {
    #[error("starting the wasm engine: {0}")]
    Engine(#[from] rekon_runtime::EngineError),
    #[error(transparent)]
    Cache(#[from] CacheError),
    #[error("{controller}: no module could be loaded from {dir}: {reason}")]
    NotServing {
        controller: World,
        dir: String,
        reason: String,
    },
}

/// How [`Modules`] runs.
pub struct ModulesOptions {
    /// The guests directory (guests.yaml and the modules, or a mounted ConfigMap);
    /// `None` when modules come only from `DecisionModule` objects.
    pub dir: Option<PathBuf>,
    /// Start even when no world has a module yet: objects will bring them.
    pub wait_for_modules: bool,
    /// Keep precompiled modules here across restarts.
    pub cache_dir: Option<PathBuf>,
    /// Write the [`Status`] here as JSON after every change.
    pub status_file: Option<PathBuf>,
    pub engine: EngineConfig,
    /// Recent inputs replayed on a new version before it serves (0: no canary replay).
    pub canary_inputs: usize,
    /// Shadow differences kept for the status and `rekon diff`.
    pub shadow_differences_kept: usize,
    /// Record Kubernetes Events on this Pod (see [`EventTarget::from_env`]).
    pub events: Option<EventTarget>,
    /// Told every activation and shadow verdict (metrics).
    pub observer: Arc<dyn ModulesObserver>,
    /// The shadow budget of every world: threads of their own, and how many
    /// shadow decisions may wait before more are dropped.
    pub shadow_threads: usize,
    pub shadow_queue: usize,
}

impl ModulesOptions {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: Some(dir.into()),
            wait_for_modules: false,
            ..Self::without_dir()
        }
    }

    /// Modules only from [`Modules::apply_plan`] (`DecisionModule` objects).
    pub fn without_dir() -> Self {
        Self {
            dir: None,
            wait_for_modules: true,
            cache_dir: None,
            status_file: None,
            engine: EngineConfig::default(),
            canary_inputs: 64,
            shadow_differences_kept: 100,
            events: None,
            observer: Arc::new(NoModulesObserver),
            shadow_threads: 1,
            shadow_queue: 16,
        }
    }
}

/// What one reload did for one controller.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Unchanged,
    /// A new set of versions was published; `serving` is its id.
    Published {
        serving: String,
    },
    Refused(String),
    /// The guests directory has no module for this world, and none served
    /// before: its controller waits for one.
    Missing(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReloadReport {
    pub changes: Vec<(World, Change)>,
}

impl ReloadReport {
    pub fn change(&self, world: World) -> &Change {
        &self
            .changes
            .iter()
            .find(|(w, _)| *w == world)
            .expect("every world reported")
            .1
    }
}

/// Cheap to clone; every clone manages the same modules.
#[derive(Clone)]
pub struct Modules {
    shared: Arc<Shared>,
}

struct Shared {
    dir: Option<PathBuf>,
    /// Worlds served from an object (by name): the guests directory does not touch them.
    claimed: Mutex<BTreeMap<&'static str, String>>,
    /// (world, object) pairs already logged as overriding the guests directory.
    announced: Mutex<BTreeSet<(&'static str, String)>>,
    loader: Loader,
    reporter: Arc<Reporter>,
    controllers: Vec<Arc<Controller>>,
    /// The controller modules (generic world), by controller name.
    controller_modules: ControllerModules,
    /// One reload at a time (watch events, periodic rescans, explicit calls).
    reloading: tokio::sync::Mutex<()>,
    /// Reads of the guests directory so far.
    reloads: AtomicU64,
}

impl Modules {
    /// Loads every world's modules. A world without any module in the directory
    /// is left waiting for one (its controller starts when it appears); fails
    /// when a module present cannot serve, or when no world has one.
    pub async fn open(options: ModulesOptions) -> Result<Self, ModulesError> {
        let engine = Engine::new(options.engine)?;
        let cache =
            PrecompiledCache::new(engine.compatibility_hash(), options.cache_dir.as_deref())?;
        let shadows = Arc::new(ShadowPool::new(
            options.shadow_threads,
            options.shadow_queue,
        ));
        let reporter = Arc::new(Reporter::new(options.status_file, options.events));
        let controller_modules = ControllerModules::new(
            reporter.clone(),
            options.observer.clone(),
            options.shadow_differences_kept,
            shadows.clone(),
        );
        let controllers = World::dedicated()
            .map(|w| {
                let observer = options.observer.clone();
                Arc::new(Controller::new(
                    w,
                    options.canary_inputs,
                    options.shadow_differences_kept,
                    observer,
                    shadows.clone(),
                ))
            })
            .collect();
        let modules = Self {
            shared: Arc::new(Shared {
                dir: options.dir,
                claimed: Mutex::default(),
                announced: Mutex::default(),
                loader: Loader::new(engine, cache),
                reporter,
                controllers,
                controller_modules,
                reloading: tokio::sync::Mutex::new(()),
                reloads: AtomicU64::new(0),
            }),
        };
        let report = modules.reload().await;
        if options.wait_for_modules {
            return Ok(modules);
        }
        let dir = modules.dir().map(|d| d.display().to_string());
        let not_serving = |controller: &Controller, reason: &str| ModulesError::NotServing {
            controller: controller.world(),
            dir: dir.clone().unwrap_or_default(),
            reason: reason.to_string(),
        };
        let mut missing = None;
        for controller in &modules.shared.controllers {
            match report.change(controller.world()) {
                Change::Missing(reason) => {
                    missing.get_or_insert_with(|| not_serving(controller, reason));
                }
                Change::Refused(reason) => return Err(not_serving(controller, reason)),
                Change::Published { .. } | Change::Unchanged => {}
            }
        }
        match missing {
            Some(err) if !modules.shared.controllers.iter().any(|c| c.is_serving()) => Err(err),
            _ => Ok(modules),
        }
    }

    pub fn dir(&self) -> Option<&Path> {
        self.shared.dir.as_deref()
    }

    pub fn engine(&self) -> &Engine {
        self.shared.loader.engine()
    }

    pub(crate) fn loader(&self) -> &Loader {
        &self.shared.loader
    }

    pub(crate) fn controller_modules(&self) -> &ControllerModules {
        &self.shared.controller_modules
    }

    /// Why controller modules of the guests directory were refused at its
    /// last read (see [`crate::generic`]), one message each.
    pub fn controller_refusals(&self) -> Vec<String> {
        self.shared.controller_modules.refusals()
    }

    /// The slots of every world, for the host.
    pub fn deciders(&self) -> Deciders {
        let mut deciders = Deciders::new();
        for controller in &self.shared.controllers {
            controller.slot().insert_into(&mut deciders);
        }
        deciders
    }

    /// The slot world `W`'s controller decides from.
    pub fn slot<W: GuestWorld>(&self) -> Arc<Slot<W>> {
        self.deciders().get::<W>().expect("a controller per world")
    }

    /// Every world's and every controller module's status, by name.
    pub fn status(&self) -> Status {
        let mut controllers = self.shared.controller_modules.status();
        controllers.extend(
            self.shared
                .controllers
                .iter()
                .map(|c| (c.world().name().to_string(), c.status())),
        );
        Status { controllers }
    }

    /// The tally of the shadow currently running beside `world`'s active version.
    pub fn shadow_tally(&self, world: World) -> Option<Arc<ShadowTally>> {
        self.controller(world).shadow_tally()
    }

    /// How many times the guests directory was read ([`Modules::reload`] calls).
    pub fn reloads(&self) -> u64 {
        self.shared.reloads.load(Ordering::Relaxed)
    }

    /// Writes the status file if the status changed since it was last written
    /// (decision and shadow counts change without any reload).
    pub fn refresh_status(&self) {
        self.shared.reporter.status(&self.status());
    }

    /// Reads the guests directory again and publishes what changed. Anything
    /// that fails a check, or panics while being loaded, is refused and
    /// reported; the old version keeps serving.
    pub async fn reload(&self) -> ReloadReport {
        let _one_at_a_time = self.shared.reloading.lock().await;
        self.shared.reloads.fetch_add(1, Ordering::Relaxed);
        let Some(dir) = self.shared.dir.clone() else {
            self.refresh_status();
            return ReloadReport {
                changes: World::dedicated().map(|w| (w, Change::Unchanged)).collect(),
            };
        };
        let config = self.engine().config();
        let (defaults, max_memory) = (config.default_limits, config.max_memory_bytes);
        let plan = match tokio::task::spawn_blocking(move || read_plan(&dir, defaults, max_memory))
            .await
        {
            Ok(plan) => plan.map_err(|err| err.to_string()),
            Err(panic) => Err(panicked("reading the guests directory", panic)),
        };
        let mut changes = Vec::new();
        self.reload_controller_modules().await;
        match plan {
            Err(reason) => {
                for controller in &self.shared.controllers {
                    let change = if self.claimed_by(controller.world()).is_some() {
                        Change::Unchanged
                    } else {
                        self.refuse(controller, None, reason.clone())
                    };
                    changes.push((controller.world(), change));
                }
            }
            Ok(plan) => {
                for (world, plan) in plan.controllers {
                    let controller = self.controller(world).clone();
                    if let Some(owner) = self.claimed_by(world) {
                        self.announce_override(world, owner, plan.is_ok());
                        changes.push((world, Change::Unchanged));
                        continue;
                    }
                    let change = match plan {
                        Err(err @ SourceError::NoModule { .. }) => {
                            self.missing(&controller, err.to_string())
                        }
                        Err(err) => self.refuse(&controller, None, err.to_string()),
                        Ok(plan) => {
                            self.apply_typed(&controller, plan, &Preloaded::new())
                                .await
                                .0
                        }
                    };
                    changes.push((world, change));
                }
            }
        }
        self.refresh_status();
        ReloadReport { changes }
    }

    /// Reads the guests directory's controller modules again: new files
    /// and versions serve, files gone stop serving.
    async fn reload_controller_modules(&self) {
        let Some(dir) = self.shared.dir.clone() else {
            return;
        };
        let shared = self.shared.clone();
        let config = self.engine().config();
        let (limits, max_mib) = (config.default_limits, config.max_memory_bytes >> 20);
        let found = tokio::task::spawn_blocking(move || {
            crate::generic::load_dir(&shared.loader, limits, max_mib, &dir)
        })
        .await;
        match found {
            Ok(found) => self.shared.controller_modules.dir_loaded(found),
            Err(panic) => tracing::error!(
                error = %panicked("reading the guests directory's controller modules", panic),
                "controller modules not reloaded; the next change or rescan retries"
            ),
        }
    }

    fn controller(&self, world: World) -> &Arc<Controller> {
        self.shared
            .controllers
            .iter()
            .find(|c| c.world() == world)
            .expect("a controller per world")
    }

    fn refuse(
        &self,
        controller: &Controller,
        plan: Option<&ControllerPlan>,
        reason: String,
    ) -> Change {
        if let Some(event) = controller.refuse(plan, reason.clone()) {
            self.shared.reporter.event(&event);
        }
        Change::Refused(reason)
    }

    /// No module for `controller`'s world: refused once one served (it keeps
    /// serving), else the controller waits for one.
    fn missing(&self, controller: &Controller, reason: String) -> Change {
        if controller.is_serving() {
            return self.refuse(controller, None, reason);
        }
        controller.slot().missing(&reason);
        Change::Missing(reason)
    }

    /// Applies `plan` and says why when it was refused; `preloaded` holds
    /// versions (or refusals) loaded before.
    async fn apply_typed(
        &self,
        controller: &Arc<Controller>,
        plan: ControllerPlan,
        preloaded: &Preloaded,
    ) -> (Change, Option<RefusalReason>) {
        let plan = match controller.prepare(plan) {
            Preparation::Unchanged => return (Change::Unchanged, None),
            Preparation::Refused(reason) => {
                return (
                    self.refuse(controller, None, reason),
                    Some(RefusalReason::RolledBackBefore),
                );
            }
            Preparation::Load(plan) => *plan,
        };
        let checked = self.load_and_check(controller, &plan, preloaded).await;
        // What neither serves nor may serve now leaves memory.
        self.retain_cache();
        match checked {
            Ok(change) => (change, None),
            Err(refusal) => (
                self.refuse(controller, Some(&plan), refusal.message),
                Some(refusal.reason),
            ),
        }
    }

    async fn load_and_check(
        &self,
        controller: &Arc<Controller>,
        plan: &ControllerPlan,
        preloaded: &Preloaded,
    ) -> Result<Change, Refusal> {
        let serving = self
            .load(controller, plan, &plan.serving, preloaded)
            .await?;
        let shadow = match &plan.shadow {
            Some(file) => Some(self.load(controller, plan, file, preloaded).await?),
            None => None,
        };
        let fallback = match &plan.fallback {
            Some(file) => Some(self.load(controller, plan, file, preloaded).await?),
            None => None,
        };
        // Only a new version taking over in mode active is replayed: the other
        // modes serve the previous, known version.
        if plan.mode == Mode::Active && !controller.serves(serving.digest()) {
            let (version, slot) = (serving.clone(), controller.slot().clone());
            let replay = tokio::task::spawn_blocking(move || slot.replay(&version))
                .await
                .map_err(|panic| {
                    Refusal::new(
                        RefusalReason::Internal,
                        panicked("the canary replay", panic),
                    )
                })?;
            if let Err(failure) = replay {
                return Err(Refusal::new(
                    RefusalReason::CanaryFailed,
                    format!("{}: {failure}", serving.id()),
                ));
            }
        }
        let trip = self.trip_factory(controller.world());
        let event = controller.commit(plan, serving.clone(), shadow, fallback, &*trip);
        self.shared.reporter.event(&event);
        if !plan.pinned {
            tracing::info!(controller = %plan.world, module = %plan.serving.path.display(),
                sha256 = %plan.serving.digest,
                "module not pinned (no guests.yaml); pin this digest in guests.yaml for production");
        }
        Ok(Change::Published {
            serving: serving.id().to_string(),
        })
    }

    /// Serves `world` from an object named `owner` from now on: the guests
    /// directory no longer changes it.
    pub fn claim(&self, world: World, owner: &str) {
        let previous = self
            .shared
            .claimed
            .lock()
            .unwrap()
            .insert(world.name(), owner.to_string());
        if previous.as_deref() != Some(owner) && self.shared.dir.is_some() {
            tracing::info!(%world, object = owner,
                "DecisionModule {owner} serves world {world}; the guests directory no longer does");
        }
    }

    /// No object names `world` any more (`reason` says what happened): its
    /// module stops deciding, and the guests directory serves the world again
    /// if it has a module for it.
    pub async fn release(&self, world: World, reason: &str) {
        let owner = self.shared.claimed.lock().unwrap().remove(world.name());
        if let Some(owner) = &owner {
            self.shared
                .announced
                .lock()
                .unwrap()
                .remove(&(world.name(), owner.clone()));
        }
        self.withdraw(world, reason);
        let controller = self.controller(world).clone();
        if self.shared.dir.is_some() {
            self.reload().await;
            if controller.is_serving() {
                tracing::info!(%world, "world {world} is served from the guests directory again");
            }
        }
        self.refresh_status();
    }

    /// `world`'s module stops deciding (`reason` says why, in the log, the
    /// Event and the metrics): decisions fail until a module serves again.
    pub fn withdraw(&self, world: World, reason: &str) {
        let controller = self.controller(world).clone();
        if let Some(event) = controller.withdraw(reason) {
            self.shared.reporter.event(&event);
        }
        self.retain_cache();
        self.refresh_status();
    }

    /// Keeps in memory only the precompiled versions that serve or may serve.
    pub(crate) fn retain_cache(&self) {
        let keep: Vec<ModuleDigest> = self
            .shared
            .controllers
            .iter()
            .flat_map(|c| c.kept_digests())
            .chain(self.shared.controller_modules.kept_digests())
            .collect();
        self.shared.loader.cache().retain(&keep);
    }

    /// How many precompiled modules the cache holds in memory.
    pub fn precompiled_in_memory(&self) -> usize {
        self.shared.loader.cache().in_memory()
    }

    fn claimed_by(&self, world: World) -> Option<String> {
        self.shared
            .claimed
            .lock()
            .unwrap()
            .get(world.name())
            .cloned()
    }

    /// Logs once that an object overrides a module the guests directory names.
    fn announce_override(&self, world: World, owner: String, dir_has_one: bool) {
        if dir_has_one
            && self
                .shared
                .announced
                .lock()
                .unwrap()
                .insert((world.name(), owner.clone()))
        {
            tracing::warn!(%world, object = %owner,
                "both DecisionModule {owner} and the guests directory name world {world}; the object wins");
        }
    }

    /// Applies a plan that comes from elsewhere than the guests directory (a
    /// `DecisionModule`): the same checks, canary and publication.
    /// Compiling happens before taking the lock every change goes through, so
    /// one world's long compile never holds up another world's change.
    pub async fn apply_plan(&self, plan: ControllerPlan) -> Result<Change, Refusal> {
        let controller = self.controller(plan.world).clone();
        let mut preloaded = Preloaded::new();
        if !controller.is_unchanged(&plan) {
            let files = std::iter::once(&plan.serving)
                .chain(plan.shadow.as_ref())
                .chain(plan.fallback.as_ref());
            for file in files {
                let loaded = self.load(&controller, &plan, file, &preloaded).await;
                preloaded.insert(file.digest.clone(), loaded);
            }
        }
        let _one_at_a_time = self.shared.reloading.lock().await;
        let (change, reason) = self.apply_typed(&controller, plan, &preloaded).await;
        self.refresh_status();
        match (change, reason) {
            (Change::Refused(message), Some(reason)) => Err(Refusal::new(reason, message)),
            (Change::Refused(message), None) => Err(Refusal::new(RefusalReason::Internal, message)),
            (change, _) => Ok(change),
        }
    }

    /// Records a refusal that happened before any plan (fetching, validating):
    /// event and status as for any other; the old version keeps serving.
    pub fn refuse_world(&self, world: World, refusal: &Refusal) {
        let controller = self.controller(world).clone();
        self.refuse(&controller, None, refusal.message.clone());
    }

    /// Promotes every shadow whose evidence is in (mode shadow with
    /// `autoPromote`), a world's or a controller module's.
    pub fn promote_due(&self) {
        for controller in &self.shared.controllers {
            let trip = self.trip_factory(controller.world());
            if let Some(event) = controller.promote_due(&*trip) {
                self.shared.reporter.event(&event);
                self.refresh_status();
            }
        }
        if self.shared.controller_modules.promote_due() {
            self.refresh_status();
        }
    }

    /// A loaded version for `file`: reused when already loaded, else loaded off
    /// the reconcile path.
    async fn load(
        &self,
        controller: &Controller,
        plan: &ControllerPlan,
        file: &ModuleFile,
        preloaded: &Preloaded,
    ) -> Result<Arc<ModuleVersion>, Refusal> {
        if let Some(loaded) = preloaded.get(&file.digest) {
            return loaded.clone();
        }
        if let Some(version) = controller.loaded(plan, &file.digest) {
            return Ok(version);
        }
        let what = format!("loading {}", file.path.display());
        let (shared, world, limits, file) =
            (self.shared.clone(), plan.world, plan.limits, file.clone());
        let loaded = tokio::task::spawn_blocking(move || shared.loader.load(world, limits, &file))
            .await
            .map_err(|panic| Refusal::new(RefusalReason::Internal, panicked(&what, panic)))?;
        loaded
            .map(Arc::new)
            .map_err(|err: LoadError| Refusal::new(RefusalReason::of_load(&err), err.to_string()))
    }

    /// Callbacks for the guards of `world`'s versions: roll back and report.
    fn trip_factory(&self, world: World) -> Box<dyn Fn(u64) -> Trip> {
        let shared = Arc::downgrade(&self.shared);
        Box::new(move |serial| {
            let shared = shared.clone();
            Box::new(move |decisions, failures| {
                roll_back(&shared, world, serial, decisions, failures)
            })
        })
    }
}

/// Versions of one plan loaded before its turn to apply, by digest (a
/// refusal when loading failed, so it is not loaded twice).
type Preloaded = BTreeMap<ModuleDigest, Result<Arc<ModuleVersion>, Refusal>>;

/// A blocking step that panicked, as the reason of a refusal: the reload
/// task lives on and later changes still apply.
fn panicked(what: &str, panic: tokio::task::JoinError) -> String {
    let message = match panic.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string panic".into()),
        Err(err) => err.to_string(),
    };
    format!("{what} panicked: {message}")
}

fn roll_back(shared: &Weak<Shared>, world: World, serial: u64, decisions: u64, failures: u64) {
    let Some(shared) = shared.upgrade() else {
        return;
    };
    let modules = Modules { shared };
    let controller = modules.controller(world).clone();
    let trip = modules.trip_factory(world);
    if let Some(event) = controller.roll_back(serial, decisions, failures, &*trip) {
        modules.shared.reporter.event(&event);
        modules.shared.reporter.status(&modules.status());
    }
}

impl std::fmt::Debug for Modules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Modules")
            .field("dir", &self.shared.dir)
            .finish_non_exhaustive()
    }
}
