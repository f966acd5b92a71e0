//! The controller runtime, on kube-runtime's model: a [`Reconciler`] names its
//! decision world, the APIs and caches it watches with the keys their events
//! enqueue, reconciles one key, and picks the requeue after a failure. The
//! host runs any number of them the same way: a queue, panic-safe workers,
//! metrics, readiness.

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::FutureExt;
use rekon_contract::WitWorld;
use rekon_machinery::queue::{QueueKey, WorkQueue};

use crate::context::Context;
use crate::decider::Slot;
use crate::fence::Fence;
use crate::observe::{MetricFamily, ReconcileResult};
use crate::pool::panic_message;
use crate::reconcile::{Outcome, ReconcileError, log_failure};
use crate::watches::{SyncGate, Watches};

/// A controller built into the host: one per type, made from its decision slot.
pub trait Builtin: Reconciler {
    fn new(ctx: Arc<Context>, decider: Arc<Slot<Self::World>>) -> Self;

    /// Its reference logic linked natively, if it has one (feature `native`:
    /// benches and tests compare wasm against it).
    #[cfg(feature = "native")]
    fn native() -> Option<Arc<dyn crate::decider::Decider<Self::World>>> {
        None
    }
}

pub trait Reconciler: Send + Sync + Sized + 'static {
    /// The controller's name (`--controllers`, metrics, logs, the journal).
    const NAME: &'static str;
    /// The API group/versions it watches (`v1`, `resource.k8s.io/v1`): it starts
    /// only once the server serves each of them.
    const APIS: &'static [&'static str];
    /// The WIT world its decisions come from.
    type World: WitWorld;
    /// Its work-queue key.
    type Key: QueueKey + fmt::Display;

    /// This controller's name: [`Self::NAME`] for a built-in one, the module's
    /// own for a controller module.
    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// Its own metric families (beyond the host's reconcile, queue and
    /// decision metrics), read at scrape time. None by default.
    fn metrics(&self) -> Vec<MetricFamily> {
        Vec::new()
    }

    /// Registers its watches and enqueue rules.
    fn watches(self: &Arc<Self>, watches: &mut Watches<'_, Self::Key>);

    fn reconcile(
        &self,
        key: &Self::Key,
    ) -> impl Future<Output = Result<Outcome, ReconcileError>> + Send;

    /// Picks the requeue for a failed reconcile (and reports it). By default:
    /// log, then [`ReconcileError::requeue`].
    fn error_policy(
        &self,
        key: &Self::Key,
        err: &ReconcileError,
    ) -> impl Future<Output = Outcome> + Send {
        log_failure(self.name(), key, err);
        std::future::ready(err.requeue())
    }
}

/// A queue as the host sees it, whatever its key type.
pub trait QueueView: Send + Sync {
    fn is_idle_within(&self, bound: Duration) -> bool;
    fn pending(&self) -> Vec<String>;
    fn shutdown(&self);
}

impl<K: QueueKey + fmt::Display> QueueView for WorkQueue<K> {
    fn is_idle_within(&self, bound: Duration) -> bool {
        WorkQueue::is_idle_within(self, bound)
    }

    fn pending(&self) -> Vec<String> {
        self.pending_keys()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn shutdown(&self) {
        WorkQueue::shutdown(self)
    }
}

/// How many of a controller's workers run; a worker that died is reported by
/// `/readyz`.
#[derive(Default)]
pub struct WorkerCount {
    pub expected: usize,
    pub running: AtomicUsize,
}

/// Decrements the running count when a worker ends, however it ends.
struct Alive(Arc<WorkerCount>);

impl Alive {
    fn new(count: Arc<WorkerCount>) -> Self {
        count.running.fetch_add(1, Ordering::AcqRel);
        Self(count)
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How a worker is told to stop: gently (no new key) or at once (revoked).
#[derive(Clone, Default)]
pub(crate) struct Halt {
    pub stopping: Arc<AtomicBool>,
    /// This controller alone stops (its module went or changed).
    pub retired: Arc<AtomicBool>,
    pub fence: Fence,
}

/// One worker: waits for the controller's caches, then reconciles keys until
/// the queue shuts down. A panicking reconcile is counted, its key released and
/// requeued with backoff; the worker goes on. Once `fence` is revoked the
/// reconcile in flight is dropped (cancelled at its next await) and the worker ends.
pub(crate) async fn work<R: Reconciler>(
    controller: Arc<R>,
    ctx: Arc<Context>,
    queue: Arc<WorkQueue<R::Key>>,
    gates: Arc<Vec<Arc<dyn SyncGate>>>,
    count: Arc<WorkerCount>,
    halt: Halt,
    on_done: Arc<dyn Fn() + Send + Sync>,
) {
    let Halt {
        stopping,
        retired,
        fence,
    } = halt;
    let _alive = Alive::new(count);
    for gate in gates.iter() {
        gate.wait_synced().await;
    }
    while let Some(key) = queue.get().await {
        if stopping.load(Ordering::Acquire) || retired.load(Ordering::Acquire) {
            queue.done(&key);
            break;
        }
        let started = Instant::now();
        let reconcile = AssertUnwindSafe(controller.reconcile(&key)).catch_unwind();
        let reconciled = tokio::select! {
            biased;
            _ = fence.revoked() => {
                queue.done(&key);
                break;
            }
            reconciled = reconcile => reconciled,
        };
        let (outcome, result) = match reconciled {
            Ok(Ok(outcome)) => (outcome, result_of(outcome)),
            Ok(Err(err)) => (
                controller.error_policy(&key, &err).await,
                ReconcileResult::Error,
            ),
            Err(panic) => {
                tracing::error!(controller = controller.name(), key = %key, panic = %panic_message(&*panic),
                    "reconcile panicked; key requeued with backoff");
                ctx.observer.reconcile_panicked(controller.name());
                (Outcome::Retry, ReconcileResult::Error)
            }
        };
        ctx.observer
            .reconciled(controller.name(), result, started.elapsed());
        queue.finish(&key, outcome);
        on_done();
    }
}

fn result_of(outcome: Outcome) -> ReconcileResult {
    match outcome {
        Outcome::Done => ReconcileResult::Success,
        Outcome::Retry => ReconcileResult::Error,
        Outcome::RetryAfter(_) => ReconcileResult::RequeueAfter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Journal;
    use crate::observe::Observer;
    use rekon_contract::PvcProtectionWorld;
    use rekon_machinery::queue::QueueConfig;
    use std::sync::Mutex;

    /// Panics on its first reconcile of each key, succeeds afterwards.
    #[derive(Default)]
    struct PanicsOnce {
        seen: Mutex<Vec<String>>,
        done: Mutex<Vec<String>>,
    }

    impl Reconciler for PanicsOnce {
        const NAME: &'static str = "panics-once";
        const APIS: &'static [&'static str] = &["v1"];
        type World = PvcProtectionWorld;
        type Key = String;

        fn watches(self: &Arc<Self>, _: &mut Watches<'_, String>) {}

        async fn reconcile(&self, key: &String) -> Result<Outcome, ReconcileError> {
            let first = {
                let mut seen = self.seen.lock().unwrap();
                let first = !seen.contains(key);
                seen.push(key.clone());
                first
            };
            if first {
                panic!("reconcile bug on {key}");
            }
            self.done.lock().unwrap().push(key.clone());
            Ok(Outcome::Done)
        }
    }

    impl Builtin for PanicsOnce {
        fn new(_: Arc<Context>, _: Arc<Slot<PvcProtectionWorld>>) -> Self {
            Self::default()
        }
    }

    #[derive(Default)]
    struct Panics(AtomicUsize);
    impl Observer for Panics {
        fn reconcile_panicked(&self, controller: &str) {
            assert_eq!(controller, "panics-once");
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_panicking_reconcile_is_requeued_and_the_worker_keeps_running() {
        let client =
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap()))
                .unwrap();
        let observer = Arc::new(Panics::default());
        let ctx = Arc::new(Context::new(
            client,
            Arc::new(Journal::disabled()),
            observer.clone(),
        ));
        let controller = Arc::new(PanicsOnce::default());
        let queue = Arc::new(WorkQueue::new(
            QueueConfig::named("panics-once").without_overall_limit(),
        ));
        let count = Arc::new(WorkerCount {
            expected: 1,
            ..WorkerCount::default()
        });
        let worker = tokio::spawn(work(
            controller.clone(),
            ctx,
            queue.clone(),
            Arc::new(Vec::new()),
            count.clone(),
            Halt::default(),
            Arc::new(|| {}),
        ));
        queue.add("ns/a".to_string());
        let deadline = Instant::now() + Duration::from_secs(10);
        while controller.done.lock().unwrap().is_empty() {
            assert!(Instant::now() < deadline, "the key never converged");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(*controller.done.lock().unwrap(), ["ns/a"]);
        assert_eq!(
            controller.seen.lock().unwrap().len(),
            2,
            "one panic, one retry"
        );
        assert_eq!(
            observer.0.load(Ordering::Relaxed),
            1,
            "the panic is counted"
        );
        assert_eq!(count.running.load(Ordering::Acquire), 1, "the worker lives");
        assert!(queue.is_idle_within(Duration::ZERO), "the key was released");
        queue.shutdown();
        worker.await.unwrap();
        assert_eq!(count.running.load(Ordering::Acquire), 0);
    }
}
