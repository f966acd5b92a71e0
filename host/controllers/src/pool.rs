//! The decision pool: guest decisions run on tokio's blocking threads behind a
//! semaphore (as Kubewarden's policy-server does), never on an async worker.
//!
//! A decision may run up to its deadline and a guest's sync WASI calls (stderr)
//! block on the runtime; on a blocking thread neither starves the watches, the
//! queues or `/healthz`. The semaphore bounds how many decisions run at once.

use std::sync::Arc;

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
