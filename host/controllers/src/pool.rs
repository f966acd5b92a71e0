//! The decision pool: guest decisions run on tokio's blocking threads behind a
//! semaphore (as Kubewarden's policy-server does), never on an async worker.
//!
//! A decision may run up to its deadline and a guest's sync WASI calls (stderr)
//! block on the runtime; on a blocking thread neither starves the watches, the
//! queues or `/healthz`. The semaphore bounds how many decisions run at once.
//!
//! Shadow decisions run elsewhere, on a [`ShadowPool`] of their own: a slow
//! candidate then costs its own few threads, never a permit of this pool.

use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use rekon_contract::WitWorld;
use tokio::sync::Semaphore;

use crate::decider::{DecideError, Decider};
use crate::observe::DecisionFailure;

pub struct DecisionPool {
    permits: Arc<Semaphore>,
    size: usize,
}

impl DecisionPool {
    /// At most `size` decisions at once (at least one).
    pub fn new(size: usize) -> Self {
        let size = size.max(1);
        Self {
            permits: Arc::new(Semaphore::new(size)),
            size,
        }
    }

    /// One decision per available core.
    pub fn from_available_parallelism() -> Self {
        Self::new(std::thread::available_parallelism().map_or(2, |n| n.get()))
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Runs one decision on a blocking thread. A panic in the decider is that
    /// decision's failure, never the worker's.
    pub async fn decide<W: WitWorld>(
        &self,
        decider: Arc<dyn Decider<W>>,
        key: &str,
        input: W::Input,
    ) -> Result<W::Decision, DecideError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .expect("the decision pool's semaphore is never closed");
        let guest = decider.info().name;
        let key = key.to_string();
        let call = tokio::task::spawn_blocking(move || decider.decide(&key, input));
        // Whoever decided (a module, linked logic, a panic), its error text
        // leaves the pool within the error budget.
        let result = match call.await {
            Ok(result) => result,
            Err(err) => Err(DecideError {
                guest,
                message: match err.try_into_panic() {
                    Ok(panic) => format!("decision panicked: {}", panic_message(&*panic)),
                    Err(err) => format!("decision cancelled: {err}"),
                },
                failure: DecisionFailure::Trap,
            }),
        };
        result.map_err(|mut err| {
            err.message = crate::budget::error_text(&err.message);
            err
        })
    }
}

impl Default for DecisionPool {
    fn default() -> Self {
        Self::from_available_parallelism()
    }
}

/// A job of the shadow pool.
type ShadowJob = Box<dyn FnOnce() + Send>;

/// The bounded budget of shadow decisions: `threads` threads of their own and
/// at most `queue` decisions waiting. A shadow decision that finds it full is
/// not run (the caller counts it dropped), so a slow or stuck candidate can
/// neither hold a permit of the [`DecisionPool`] nor pile up work.
pub struct ShadowPool {
    jobs: SyncSender<ShadowJob>,
}

impl ShadowPool {
    /// Starts `threads` threads (at least one) behind a queue of `queue` jobs.
    /// They stop once the pool is dropped and the queue drained.
    pub fn new(threads: usize, queue: usize) -> Self {
        let (jobs, receiver) = std::sync::mpsc::sync_channel::<ShadowJob>(queue);
        let receiver = Arc::new(Mutex::new(receiver));
        for n in 0..threads.max(1) {
            let receiver = receiver.clone();
            std::thread::Builder::new()
                .name(format!("rekon-shadow-{n}"))
                .spawn(move || run_shadow_jobs(&receiver))
                .expect("starting a shadow decision thread");
        }
        Self { jobs }
    }

    /// Queues `job`; `false` when the budget is full (the job is dropped).
    pub fn try_run(&self, job: impl FnOnce() + Send + 'static) -> bool {
        match self.jobs.try_send(Box::new(job)) {
            Ok(()) => true,
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
        }
    }
}

fn run_shadow_jobs(receiver: &Mutex<Receiver<ShadowJob>>) {
    loop {
        let job = match receiver.lock().unwrap().recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        // A panicking shadow is that shadow's problem; the thread serves on.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

/// The message of a panic payload (`panic!` with a literal or a format).
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decider::GuestInfo;
    use rekon_contract::PvcProtectionWorld as Pvc;
    use rekon_guest::model::{PvcDecision, PvcInput};

    struct Panics;
    impl Decider<Pvc> for Panics {
        fn info(&self) -> GuestInfo {
            GuestInfo {
                name: "panics".into(),
                digest: "x".into(),
            }
        }
        fn decide(&self, _: &str, _: PvcInput) -> Result<PvcDecision, DecideError> {
            panic!("boom")
        }
    }

    #[test]
    fn a_full_shadow_pool_drops_jobs_instead_of_queueing_them() {
        let pool = ShadowPool::new(1, 1);
        let (started, release) = (
            Arc::new(std::sync::Barrier::new(2)),
            Arc::new(Mutex::new(())),
        );
        let hold = release.lock().unwrap();
        let (s, r) = (started.clone(), release.clone());
        assert!(pool.try_run(move || {
            s.wait();
            drop(r.lock().unwrap());
        }));
        started.wait();
        assert!(pool.try_run(|| {}), "one job may wait");
        assert!(!pool.try_run(|| {}), "the second waiting job is dropped");
        drop(hold);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_panicking_decision_is_one_failed_decision() {
        let pool = DecisionPool::new(1);
        let err = pool
            .decide::<Pvc>(Arc::new(Panics), "ns/a", PvcInput::default())
            .await
            .unwrap_err();
        assert_eq!(err.failure, DecisionFailure::Trap);
        assert!(err.message.contains("boom"), "{}", err.message);
        assert_eq!(err.guest, "panics");
    }
}
