//! A running controller and how one starts: its queue, its watches, its
//! workers, over what the host's tasks share.

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rekon_machinery::queue::{QueueConfig, WorkQueue};
use tokio::task::{AbortHandle, JoinHandle};

use crate::context::Context;
use crate::decider::Deciders;
use crate::fence::Fence;
use crate::observe::MetricFamily;
use crate::reconciler::{Builtin, Halt, QueueView, Reconciler, WorkerCount, work};
use crate::watches::{Feeds, SyncGate, Watches};

#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error("controller {controller}: no decision module for world {world}")]
    NoDecider {
        controller: &'static str,
        world: &'static str,
    },
}

/// When anything last happened (cache event, reconcile), to detect quiet.
pub(crate) struct Activity(pub(crate) Mutex<Instant>);

impl Activity {
    pub(crate) fn touch(&self) {
        *self.0.lock().unwrap() = Instant::now();
    }

    pub(crate) fn quiet_for(&self) -> Duration {
        self.0.lock().unwrap().elapsed()
    }
}

/// A started controller.
pub(crate) struct Running {
    pub(crate) name: &'static str,
    pub(crate) queue: Arc<dyn QueueView>,
    pub(crate) workers: Vec<JoinHandle<()>>,
    pub(crate) count: Arc<WorkerCount>,
    pub(crate) controller: Arc<dyn Any + Send + Sync>,
    /// Its own metric families ([`Reconciler::metrics`]), read at scrape time.
    pub(crate) metrics: Box<dyn Fn() -> Vec<MetricFamily> + Send + Sync>,
    /// Set when this controller alone stops: its workers take no new key.
    pub(crate) retired: Arc<AtomicBool>,
    /// Its caches and the reflectors it started for itself.
    pub(crate) gates: Arc<Vec<Arc<dyn SyncGate>>>,
    pub(crate) reflectors: Vec<AbortHandle>,
}

/// What the host's tasks share.
pub(crate) struct Shared {
    pub(crate) ctx: Arc<Context>,
    pub(crate) feeds: Feeds,
    pub(crate) deciders: Deciders,
    pub(crate) workers: usize,
    pub(crate) queue: QueueConfig,
    pub(crate) activity: Arc<Activity>,
    /// Set at shutdown: workers take no new key, nothing more starts.
    pub(crate) stopping: Arc<AtomicBool>,
    /// Revoked when leadership is gone: no write leaves, reconciles are cancelled.
    pub(crate) fence: Fence,
    pub(crate) running: Mutex<Vec<Running>>,
    /// Controllers whose first discovery answer is still outstanding.
    pub(crate) undiscovered: AtomicUsize,
    /// Controllers waiting for their decision module, until it is published.
    pub(crate) waiting: Mutex<Vec<JoinHandle<()>>>,
}

/// Starts built-in controller `R`: its queue, its watches, its workers.
pub(crate) fn start<R: Builtin>(shared: &Shared) -> Result<Running, StartError> {
    let slot = shared
        .deciders
        .get::<R::World>()
        .ok_or(StartError::NoDecider {
            controller: R::NAME,
            world: <R::World as rekon_contract::WitWorld>::NAME,
        })?;
    let controller = Arc::new(R::new(shared.ctx.clone(), slot));
    Ok(run(shared, controller))
}

/// Runs `controller`: its queue, its watches, its workers.
pub(crate) fn run<R: Reconciler>(shared: &Shared, controller: Arc<R>) -> Running {
    let name = controller.name();
    let ctx = shared.ctx.clone();
    let queue = Arc::new(WorkQueue::<R::Key>::with_metrics(
        QueueConfig {
            name: name.into(),
            ..shared.queue.clone()
        },
        ctx.observer.queue_metrics(name),
    ));
    let mut watches = Watches::new(&shared.feeds, queue.clone());
    controller.watches(&mut watches);
    let (gates, reflectors) = watches.into_parts();
    let gates = Arc::new(gates);
    let retired = Arc::new(AtomicBool::new(false));
    let count = Arc::new(WorkerCount {
        expected: shared.workers.max(1),
        ..WorkerCount::default()
    });
    let activity = shared.activity.clone();
    let on_done: Arc<dyn Fn() + Send + Sync> = Arc::new(move || activity.touch());
    let workers = (0..count.expected)
        .map(|_| {
            tokio::spawn(work(
                controller.clone(),
                ctx.clone(),
                queue.clone(),
                gates.clone(),
                count.clone(),
                Halt {
                    stopping: shared.stopping.clone(),
                    retired: retired.clone(),
                    fence: shared.fence.clone(),
                },
                on_done.clone(),
            ))
        })
        .collect();
    ctx.observer.controller_enabled(name, true);
    tracing::info!(controller = name, "controller started");
    let metrics = {
        let controller = controller.clone();
        Box::new(move || controller.metrics())
    };
    Running {
        name,
        queue,
        workers,
        count,
        controller,
        metrics,
        retired,
        gates,
        reflectors,
    }
}
