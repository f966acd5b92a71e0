//! The controller modules a host runs, while the set changes under it: a new
//! module starts once discovery serves its kinds; a new version with the same
//! description is published into its slot and every primary key is decided
//! again; a changed description stops the controller and starts a new one;
//! a module that goes stops. The set is filled by whoever serves modules (the
//! guests directory, `DecisionModule` objects) and outlives the hosts that
//! run it (one per leadership term).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{ControllerModule, Generic, resolve_all};
use crate::running::{Running, Shared, run};
use crate::selection::Selection;

/// How long a stopping controller's reconciles in flight may take before
/// they are cancelled.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// One controller module of the set.
#[derive(Clone, Debug)]
pub struct Served {
    pub module: ControllerModule,
    /// Changes with every description: a new one means a new controller.
    pub instance: u64,
    /// Changes with every version published into the module's slot: every
    /// primary key is decided again.
    pub version: u64,
}

/// The controller modules to run, by name, and which of them run now.
/// Cheap to clone; every clone is the same set.
#[derive(Clone)]
pub struct ControllerSet {
    modules: Arc<watch::Sender<BTreeMap<String, Served>>>,
    /// The instance each running controller runs.
    running: Arc<watch::Sender<BTreeMap<String, u64>>>,
    next: Arc<std::sync::atomic::AtomicU64>,
}

impl Default for ControllerSet {
    fn default() -> Self {
        Self {
            modules: Arc::new(watch::Sender::new(BTreeMap::new())),
            running: Arc::new(watch::Sender::new(BTreeMap::new())),
            next: Arc::default(),
        }
    }
}

impl From<Vec<ControllerModule>> for ControllerSet {
    /// A set that holds `modules` (until someone changes it).
    fn from(modules: Vec<ControllerModule>) -> Self {
        let set = Self::default();
        for module in modules {
            set.serve(module);
        }
        set
    }
}

impl std::fmt::Debug for ControllerSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.modules.borrow().keys()).finish()
    }
}

impl ControllerSet {
    /// Serves `module` under its name: a new controller, or a new description
    /// replacing the one running (whose controller stops). Returns its instance.
    pub fn serve(&self, module: ControllerModule) -> u64 {
        let instance = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let name = module.name().to_string();
        self.modules.send_modify(|modules| {
            modules.insert(
                name,
                Served {
                    module,
                    instance,
                    version: 1,
                },
            );
        });
        instance
    }

    /// A new version was published into `name`'s slot: its controller decides
    /// every primary key again.
    pub fn published(&self, name: &str) {
        self.modules
            .send_if_modified(|modules| match modules.get_mut(name) {
                Some(served) => {
                    served.version += 1;
                    true
                }
                None => false,
            });
    }

    /// Stops serving `name`; returns what served.
    pub fn remove(&self, name: &str) -> Option<Served> {
        let mut removed = None;
        self.modules.send_if_modified(|modules| {
            removed = modules.remove(name);
            removed.is_some()
        });
        removed
    }

    pub fn get(&self, name: &str) -> Option<Served> {
        self.modules.borrow().get(name).cloned()
    }

    /// The modules of the set now.
    pub fn modules(&self) -> Vec<ControllerModule> {
        self.modules
            .borrow()
            .values()
            .map(|s| s.module.clone())
            .collect()
    }

    /// Whether a host runs `instance` of controller `name` now.
    pub fn is_running(&self, name: &str, instance: u64) -> bool {
        self.running.borrow().get(name) == Some(&instance)
    }

    /// Waits until no host runs `instance` of `name` (its reconciles in
    /// flight finished), at most `timeout`; whether it stopped.
    pub async fn stopped(&self, name: &str, instance: u64, timeout: Duration) -> bool {
        let mut running = self.running.subscribe();
        let stopped = running.wait_for(|r| r.get(name) != Some(&instance));
        matches!(tokio::time::timeout(timeout, stopped).await, Ok(Ok(_)))
    }

    fn mark(&self, name: &str, instance: Option<u64>) {
        self.running.send_modify(|running| match instance {
            Some(instance) => {
                running.insert(name.to_string(), instance);
            }
            None => {
                running.remove(name);
            }
        });
    }
}

/// Runs the modules of `set` that `selection` selects on `shared`'s host,
/// following the set's changes. The modules of the set now are counted as
/// undiscovered before this returns (the host is not idle before they start).
pub(crate) fn start(
    shared: &Arc<Shared>,
    set: &ControllerSet,
    selection: Selection,
    every: Duration,
) -> JoinHandle<()> {
    let mut changes = set.modules.subscribe();
    let mut serving = Serving {
        shared: shared.clone(),
        set: set.clone(),
        selection,
        every,
        tasks: BTreeMap::new(),
        skipped: BTreeSet::new(),
    };
    serving.follow(changes.borrow_and_update().clone());
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            serving.follow(changes.borrow_and_update().clone());
        }
        // Nothing will change the set any more: what runs keeps running.
        std::future::pending::<()>().await;
    })
}

/// The host's side of the set: one task per module it runs.
struct Serving {
    shared: Arc<Shared>,
    set: ControllerSet,
    selection: Selection,
    every: Duration,
    /// Dropping a module's sender stops its task and its controller.
    tasks: BTreeMap<String, watch::Sender<Served>>,
    /// Modules `--controllers` does not select (logged once).
    skipped: BTreeSet<String>,
}

impl Serving {
    fn follow(&mut self, wanted: BTreeMap<String, Served>) {
        self.tasks.retain(|name, _| wanted.contains_key(name));
        for (name, served) in wanted {
            if !self.selection.enables(&name, served.module.pinned) {
                if self.skipped.insert(name.clone()) {
                    tracing::info!(controller = %name, pinned = served.module.pinned,
                        "controller module not run: --controllers does not select it (an unpinned module runs only when named)");
                }
                continue;
            }
            match self.tasks.get(&name) {
                Some(task) => {
                    task.send_if_modified(|current| {
                        let changed = (current.instance, current.version)
                            != (served.instance, served.version);
                        *current = served;
                        changed
                    });
                }
                None => {
                    if self.shared.stopping.load(Ordering::Acquire) {
                        continue;
                    }
                    let (sender, receiver) = watch::channel(served);
                    self.shared.undiscovered.fetch_add(1, Ordering::AcqRel);
                    tokio::spawn(serve_one(
                        self.shared.clone(),
                        self.set.clone(),
                        receiver,
                        self.every,
                    ));
                    self.tasks.insert(name, sender);
                }
            }
        }
    }
}

/// Counts a module's first discovery answer once (the host's idleness waits for it).
struct FirstAnswer(Option<Arc<Shared>>);

impl FirstAnswer {
    fn answered(&mut self) {
        if let Some(shared) = self.0.take() {
            shared.undiscovered.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for FirstAnswer {
    fn drop(&mut self) {
        self.answered();
    }
}

/// Serves one module until its sender goes: discover, run, follow new
/// versions, restart on a new description, stop.
async fn serve_one(
    shared: Arc<Shared>,
    set: ControllerSet,
    mut module: watch::Receiver<Served>,
    every: Duration,
) {
    let mut first = FirstAnswer(Some(shared.clone()));
    loop {
        let served = module.borrow_and_update().clone();
        let kinds = tokio::select! {
            kinds = discover(&shared, &served.module, every, &mut first) => kinds,
            changed = module.changed() => match changed {
                Ok(()) => continue,
                Err(_) => return,
            },
        };
        if shared.stopping.load(Ordering::Acquire) {
            return;
        }
        let name = served.module.name().to_string();
        let controller = Arc::new(Generic::new(
            shared.ctx.clone(),
            served.module.clone(),
            kinds,
        ));
        let running = run(&shared, controller.clone());
        let id = address(&running);
        shared.running.lock().unwrap().push(running);
        set.mark(&name, Some(served.instance));
        let mut current = served;
        let restart = loop {
            if module.changed().await.is_err() {
                break false;
            }
            let next = module.borrow_and_update().clone();
            if next.instance != current.instance {
                break true;
            }
            if next.version != current.version {
                let keys = controller.reevaluate_all();
                tracing::info!(controller = %name, keys,
                    "a new version of the controller module serves; every primary key is decided again");
            }
            current = next;
        };
        // At shutdown the host stops every controller itself (within its grace).
        if !shared.stopping.load(Ordering::Acquire) {
            let reason = if restart {
                "its description changed"
            } else {
                "it is no longer served"
            };
            stop(&shared, id, &name, reason).await;
        }
        set.mark(&name, None);
        if !restart {
            return;
        }
    }
}

/// Resolves every kind of `module`, asking discovery every `every` until it serves them.
async fn discover(
    shared: &Shared,
    module: &ControllerModule,
    every: Duration,
    first: &mut FirstAnswer,
) -> std::collections::HashMap<rekon_contract::controller::Kind, super::Resolved> {
    let mut logged = false;
    loop {
        match resolve_all(&shared.ctx.client, module).await {
            Ok(kinds) => {
                first.answered();
                return kinds;
            }
            Err((kind, err)) if !logged => {
                tracing::warn!(controller = module.name(), kind = %kind, error = %err, every = ?every,
                    "controller module not started: the server does not serve a kind it names; asking discovery again periodically");
                logged = true;
            }
            Err(_) => {}
        }
        first.answered();
        tokio::time::sleep(every).await;
    }
}

/// Stops the running controller `id`: no new key, its reflectors stopped,
/// its reconciles in flight finished (cancelled after [`STOP_GRACE`]).
async fn stop(shared: &Shared, id: usize, name: &str, reason: &str) {
    let running: Option<Running> = {
        let mut list = shared.running.lock().unwrap();
        list.iter()
            .position(|r| address(r) == id)
            .map(|i| list.remove(i))
    };
    let Some(mut running) = running else {
        return;
    };
    running.retired.store(true, Ordering::Release);
    running.queue.shutdown();
    shared.feeds.forget(&running.gates, &running.reflectors);
    let workers = std::mem::take(&mut running.workers);
    let aborts: Vec<_> = workers.iter().map(JoinHandle::abort_handle).collect();
    let mut finished = futures::future::join_all(workers);
    if tokio::time::timeout(STOP_GRACE, &mut finished)
        .await
        .is_err()
    {
        aborts.iter().for_each(|task| task.abort());
        finished.await;
    }
    shared.ctx.observer.controller_enabled(name, false);
    tracing::info!(controller = name, reason, "controller module stopped");
}

/// A running controller's identity among the host's (its address).
fn address(running: &Running) -> usize {
    Arc::as_ptr(&running.controller).cast::<()>() as usize
}

#[cfg(test)]
mod tests {
    use rekon_contract::controller::{Decision, Description, Kind};
    use rekon_contract::{ControllerDecision, ControllerInput, ControllerWorld};

    use super::*;
    use crate::decider::{DecideError, Decider, GuestInfo};

    struct Nothing;

    impl Decider<ControllerWorld> for Nothing {
        fn info(&self) -> GuestInfo {
            GuestInfo {
                name: "nothing".into(),
                digest: "native".into(),
            }
        }

        fn decide(&self, _: &str, _: ControllerInput) -> Result<ControllerDecision, DecideError> {
            Ok(ControllerDecision::Decide(Decision::Actions(Vec::new())))
        }
    }

    fn module(name: &str) -> ControllerModule {
        let description = Description {
            name: name.into(),
            primary: Kind::new("", "v1", "PersistentVolume"),
            ..Description::default()
        };
        ControllerModule::new(description, Arc::new(Nothing)).unwrap()
    }

    #[test]
    fn a_new_version_keeps_the_instance_and_a_new_description_does_not() {
        let set = ControllerSet::from(vec![module("a")]);
        let first = set.get("a").unwrap();
        assert_eq!(first.version, 1);
        set.published("a");
        let published = set.get("a").unwrap();
        assert_eq!((published.instance, published.version), (first.instance, 2));
        set.serve(module("a"));
        assert_ne!(set.get("a").unwrap().instance, first.instance);
        set.published("gone");
        assert!(set.get("gone").is_none());
        assert!(set.remove("a").is_some());
        assert!(set.modules().is_empty());
    }

    #[tokio::test]
    async fn stopped_waits_until_no_host_runs_the_instance() {
        let set = ControllerSet::default();
        let instance = set.serve(module("a"));
        set.mark("a", Some(instance));
        assert!(set.is_running("a", instance));
        assert!(
            !set.stopped("a", instance, Duration::from_millis(50)).await,
            "still running"
        );
        let waiting = tokio::spawn({
            let set = set.clone();
            async move { set.stopped("a", instance, Duration::from_secs(10)).await }
        });
        set.mark("a", None);
        assert!(waiting.await.unwrap());
    }
}
