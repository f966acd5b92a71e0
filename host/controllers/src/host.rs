//! The host: runs the registered controllers that `--controllers` selects and
//! the server serves, each with its queue and panic-safe workers, over shared
//! reflectors; reports idleness, readiness and pending keys across all of them.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::Client;
use rekon_machinery::queue::QueueConfig;
use tokio::task::JoinHandle;

use crate::builtin::{CONTROLLERS, Registration};
use crate::context::Context;
use crate::decider::Deciders;
use crate::fence::Fence;
use crate::generic::serving::{self, ControllerSet};
use crate::journal::Journal;
use crate::observe::{MetricFamily, Observer};
use crate::reconciler::Reconciler;
use crate::running::{Activity, Shared};
use crate::selection::{Selection, missing_apis};
use crate::watches::Feeds;

/// How the host runs.
pub struct HostConfig {
    /// Workers per controller (one key is never reconciled twice at once).
    pub workers: usize,
    /// The decision slot of each controller's world.
    pub deciders: Deciders,
    /// Which controllers run (`--controllers`).
    pub controllers: Selection,
    pub journal: Arc<Journal>,
    pub queue: QueueConfig,
    /// Metrics hooks (reconciles, decisions, queues).
    pub observer: Arc<dyn Observer>,
    /// How often a controller whose API is not served asks discovery again.
    pub discovery_interval: Duration,
    /// Controller modules to run (each once discovery serves its kinds), as
    /// the set changes while the host runs.
    pub modules: ControllerSet,
}

impl HostConfig {
    pub fn new(deciders: Deciders, journal: Arc<Journal>, observer: Arc<dyn Observer>) -> Self {
        Self {
            workers: 2,
            deciders,
            controllers: Selection::default(),
            journal,
            queue: QueueConfig::default(),
            observer,
            discovery_interval: Duration::from_secs(30),
            modules: ControllerSet::default(),
        }
    }
}

/// Keys that did not settle before a deadline.
#[derive(Debug, thiserror::Error)]
#[error("controllers did not converge; keys still pending: {}", keys.join(", "))]
pub struct NotConverged {
    pub keys: Vec<String>,
}

impl Shared {
    /// Starts `registration` now, or once its world's decision module is
    /// published if the guests directory has none yet.
    fn launch(self: &Arc<Self>, registration: &'static Registration) {
        if self.stopping.load(Ordering::Acquire) {
            return;
        }
        let Some(mut missing) = self.deciders.missing(registration.world) else {
            return self.start_now(registration);
        };
        let Some(reason) = missing.borrow_and_update().clone() else {
            return self.start_now(registration);
        };
        tracing::warn!(controller = registration.name, world = registration.world, %reason,
            "controller not started: no decision module; it starts when one appears in the guests directory");
        let shared = self.clone();
        let wait = tokio::spawn(async move {
            if missing.wait_for(Option::is_none).await.is_ok() {
                shared.start_now(registration);
            }
        });
        self.waiting.lock().unwrap().push(wait);
    }

    fn start_now(&self, registration: &Registration) {
        if self.stopping.load(Ordering::Acquire) {
            return;
        }
        match (registration.start)(self) {
            Ok(running) => self.running.lock().unwrap().push(running),
            Err(err) => tracing::error!(error = %err, "controller not started"),
        }
    }

    /// Waits until the server serves every API of `registration`, then starts it.
    async fn discover_then_start(
        self: Arc<Self>,
        registration: &'static Registration,
        every: Duration,
    ) {
        let mut first = true;
        let mut logged = false;
        loop {
            match missing_apis(&self.ctx.client, registration.apis).await {
                Ok(missing) if missing.is_empty() => {
                    self.launch(registration);
                    if first {
                        self.undiscovered.fetch_sub(1, Ordering::AcqRel);
                    }
                    return;
                }
                Ok(missing) => {
                    if !logged {
                        tracing::warn!(controller = registration.name, missing = %missing.join(", "), every = ?every,
                            "controller not started: the server does not serve its API; asking discovery again periodically");
                        logged = true;
                    }
                }
                Err(err) => {
                    tracing::warn!(controller = registration.name, error = %err, "API discovery failed; asking again");
                }
            }
            if first {
                first = false;
                self.undiscovered.fetch_sub(1, Ordering::AcqRel);
            }
            tokio::time::sleep(every).await;
        }
    }

    fn caches_synced(&self) -> bool {
        self.feeds.all_synced()
    }

    /// Why this host is not ready, if it is not.
    fn unready(&self) -> Option<String> {
        let mut reasons = Vec::new();
        if !self.caches_synced() {
            reasons.push("informer caches not synced".to_string());
        }
        for running in self.running.lock().unwrap().iter() {
            let alive = running.count.running.load(Ordering::Acquire);
            if alive < running.count.expected {
                reasons.push(format!(
                    "{}: {} of {} workers not running",
                    running.name,
                    running.count.expected - alive,
                    running.count.expected
                ));
            }
        }
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }
}

/// A cheap handle on a running host for readiness and metrics.
#[derive(Clone)]
pub struct HostProbe(Arc<Shared>);

impl HostProbe {
    /// Why the host is not ready (caches not synced, workers not running).
    pub fn unready(&self) -> Option<String> {
        self.0.unready()
    }

    /// The running controller of type `R`, if it started.
    pub fn controller<R: Reconciler>(&self) -> Option<Arc<R>> {
        self.0
            .running
            .lock()
            .unwrap()
            .iter()
            .find(|r| r.name == R::NAME)
            .and_then(|r| r.controller.clone().downcast::<R>().ok())
    }

    /// The running controllers' own metric families.
    pub fn metrics(&self) -> Vec<MetricFamily> {
        let running = self.0.running.lock().unwrap();
        running.iter().flat_map(|r| (r.metrics)()).collect()
    }

    /// The names of the controllers running now.
    pub fn running(&self) -> Vec<&'static str> {
        self.0
            .running
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.name)
            .collect()
    }
}

pub struct Host {
    pub ctx: Arc<Context>,
    shared: Arc<Shared>,
    discovery: Vec<JoinHandle<()>>,
}

impl Host {
    /// Starts the selected controllers: those on core APIs at once, the others
    /// once discovery shows their APIs. Reconciles begin once their caches synced.
    pub fn start(client: Client, config: HostConfig) -> Self {
        let fence = Fence::default();
        let ctx = Arc::new(Context::new(
            fence.client(client.clone()),
            config.journal,
            config.observer.clone(),
        ));
        let activity = Arc::new(Activity(Mutex::new(Instant::now())));
        let touch = activity.clone();
        let shared = Arc::new(Shared {
            feeds: Feeds::new(client, ctx.clone(), Arc::new(move || touch.touch())),
            ctx: ctx.clone(),
            deciders: config.deciders,
            workers: config.workers,
            queue: config.queue,
            activity,
            stopping: Arc::new(AtomicBool::new(false)),
            fence,
            running: Mutex::default(),
            undiscovered: AtomicUsize::new(0),
            waiting: Mutex::default(),
        });
        let mut discovery = Vec::new();
        for registration in CONTROLLERS {
            ctx.observer.controller_enabled(registration.name, false);
            if !config.controllers.is_enabled(registration.name) {
                tracing::info!(
                    controller = registration.name,
                    "controller disabled by --controllers"
                );
                continue;
            }
            if registration.apis.iter().all(|api| !api.contains('/')) {
                shared.launch(registration);
            } else {
                shared.undiscovered.fetch_add(1, Ordering::AcqRel);
                discovery.push(tokio::spawn(
                    shared
                        .clone()
                        .discover_then_start(registration, config.discovery_interval),
                ));
            }
        }
        discovery.push(serving::start(
            &shared,
            &config.modules,
            config.controllers,
            config.discovery_interval,
        ));
        Self {
            ctx,
            shared,
            discovery,
        }
    }

    pub fn journal(&self) -> &Journal {
        &self.ctx.journal
    }

    /// Readiness and metrics handle.
    pub fn probe(&self) -> HostProbe {
        HostProbe(self.shared.clone())
    }

    /// The running controller of type `R`, if it started.
    pub fn controller<R: Reconciler>(&self) -> Option<Arc<R>> {
        self.probe().controller::<R>()
    }

    /// Marks "something happened now" (e.g. a client write whose watch events are
    /// still on their way), so `wait_idle` waits its quiet period from here.
    pub fn touch(&self) {
        self.shared.activity.touch();
    }

    pub fn caches_synced(&self) -> bool {
        self.shared.caches_synced()
    }

    /// Waits until discovery answered, the caches synced, every queue is empty
    /// with nothing in flight, no requeue is due within `requeue_bound`, and
    /// nothing happened for `quiet`. Fails after `timeout`, naming the keys
    /// still pending.
    pub async fn wait_idle(
        &self,
        quiet: Duration,
        requeue_bound: Duration,
        timeout: Duration,
    ) -> Result<(), NotConverged> {
        let deadline = Instant::now() + timeout;
        loop {
            let idle = self.shared.undiscovered.load(Ordering::Acquire) == 0
                && self.caches_synced()
                && self
                    .shared
                    .running
                    .lock()
                    .unwrap()
                    .iter()
                    .all(|r| r.queue.is_idle_within(requeue_bound))
                && self.shared.activity.quiet_for() >= quiet;
            if idle {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let mut keys: BTreeSet<String> = BTreeSet::new();
                for running in self.shared.running.lock().unwrap().iter() {
                    keys.extend(
                        running
                            .queue
                            .pending()
                            .into_iter()
                            .map(|k| format!("{} {k}", running.name)),
                    );
                }
                if !self.caches_synced() {
                    keys.insert("(caches not synced)".into());
                }
                return Err(NotConverged {
                    keys: keys.into_iter().collect(),
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Leadership is gone: from now on no write leaves this host, a write in
    /// flight is cut off, and every reconcile in flight is cancelled.
    pub fn revoke(&self) {
        self.shared.fence.revoke();
    }

    /// Stops taking keys, lets reconciles in flight finish within `grace`, then
    /// cancels the rest (see [`Host::revoke`]) and stops the watches. Queued keys
    /// are dropped: the next start finds their work again from the cluster state.
    pub async fn shutdown(self, grace: Duration) {
        self.shared.stopping.store(true, Ordering::Release);
        for task in self
            .discovery
            .iter()
            .chain(self.shared.waiting.lock().unwrap().iter())
        {
            task.abort();
        }
        let workers: Vec<JoinHandle<()>> = {
            let mut running = self.shared.running.lock().unwrap();
            running
                .iter_mut()
                .flat_map(|r| {
                    r.queue.shutdown();
                    std::mem::take(&mut r.workers)
                })
                .collect()
        };
        let aborts: Vec<_> = workers.iter().map(JoinHandle::abort_handle).collect();
        let mut workers = futures::future::join_all(workers);
        if tokio::time::timeout(grace, &mut workers).await.is_err() {
            tracing::warn!(
                ?grace,
                "reconciles still running at shutdown were cancelled"
            );
            self.revoke();
            aborts.iter().for_each(|task| task.abort());
            workers.await;
        }
        self.shared.feeds.stop();
    }
}
