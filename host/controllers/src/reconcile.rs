//! What a reconcile returns, how it fails, which requeue each failure gets, and
//! how its decision is journaled.

use std::sync::Arc;
use std::time::Instant;

use rekon_contract::WitWorld;
use serde::Serialize;
use serde_json::{Value, json};

use crate::context::Context;
use crate::decider::{DecideError, Decider, GuestInfo};
use crate::journal::{Entry, Journal};
use crate::validate::Rejected;
use crate::writes::WriteError;

/// What the worker does with the key afterwards (the queue applies it).
pub use rekon_machinery::queue::Outcome;

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// Trap, deadline, memory cap, panic, or no module loaded.
    #[error("decision failed: {0}")]
    Guest(#[from] DecideError),
    /// The guest broke the decision protocol (e.g. asked for live pods twice).
    #[error("guest {guest} broke the protocol: {message}")]
    Protocol { guest: String, message: String },
    /// The guest asked for something outside the key's scope; nothing was
    /// written. Guest strings in it are cut to the error budget when shown.
    #[error("action rejected: {}", crate::budget::error_text(&.0.to_string()))]
    Rejected(#[from] Rejected),
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A read the decision needed failed (live list or GET).
    #[error("{what}: {source}")]
    Read {
        what: String,
        #[source]
        source: kube::Error,
    },
    /// The decision stopped on an error it reported itself (e.g. a missing template).
    #[error("{0}")]
    Decision(String),
}

impl ReconcileError {
    /// The decision stopped on an error it reported itself: the guest's text,
    /// cut to the error budget (it reaches log lines and Event notes).
    pub fn decision(message: &str) -> Self {
        Self::Decision(crate::budget::error_text(message))
    }

    /// 409: the decision was made on stale state; decide again, never retry the write.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Write(w) if w.is_conflict())
    }

    /// The requeue this failure calls for: the key's backoff (5 ms, doubling),
    /// as upstream's `AddRateLimited`. A conflict is decided again from the
    /// cache, which may still lag the server: deciding again at once would spin
    /// on the same stale state.
    pub fn requeue(&self) -> Outcome {
        Outcome::Retry
    }
}

/// Logs a failed reconcile at the level it deserves. Every error can carry
/// guest or server text (a write refused for a guest-chosen field echoes it):
/// the line carries at most the error budget.
pub fn log_failure(controller: &str, key: &dyn std::fmt::Display, err: &ReconcileError) {
    let conflict = err.is_conflict();
    let err = crate::budget::error_text(&err.to_string());
    if conflict {
        tracing::info!(controller, key = %key, error = %err, "conflict: requeued to decide again from fresh state after a short backoff");
    } else {
        tracing::warn!(controller, key = %key, error = %err, "reconcile failed; requeued with backoff");
    }
}

/// Runs one decision on the decision pool, timing it for the observer and
/// journaling it with `summary` (a digest of the input).
pub async fn decide<W: WitWorld>(
    ctx: &Context,
    controller: &str,
    key: &str,
    decider: &Arc<dyn Decider<W>>,
    input: W::Input,
    summary: Value,
) -> Result<W::Decision, ReconcileError> {
    let guest = decider.info();
    let started = Instant::now();
    let result = ctx.pool.decide(decider.clone(), key, input).await;
    let failure = result.as_ref().err().map(|e| e.failure);
    ctx.observer
        .decided(controller, &guest, started.elapsed(), failure);
    record_decision(&ctx.journal, controller, key, &guest, summary, &result);
    Ok(result?)
}

/// Journals one decision (or its failure).
pub fn record_decision<D: Serialize>(
    journal: &Journal,
    controller: &str,
    key: &str,
    guest: &GuestInfo,
    input: Value,
    result: &Result<D, DecideError>,
) {
    // Nothing to keep: a long-running host does not pay for serializing.
    if !journal.is_recording() {
        return;
    }
    let outcome = match result {
        Ok(decision) => {
            crate::budget::bounded_json(decision, crate::budget::JOURNAL_DECISION_BYTES)
        }
        Err(err) => json!({
            "error": crate::budget::cut(&err.to_string(), crate::budget::JOURNAL_DECISION_BYTES)
        }),
    };
    journal.record(Entry::Decision {
        controller: controller.to_string(),
        key: key.to_string(),
        guest: guest.name.clone(),
        digest: guest.digest.clone(),
        input,
        outcome,
    });
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rekon_machinery::queue::{QueueConfig, WorkQueue};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_conflict_is_decided_again_after_the_keys_backoff_not_at_once() {
        let queue = WorkQueue::new(QueueConfig::named("test").without_overall_limit());
        let conflict = ReconcileError::Write(WriteError::Conflict {
            object: "persistentvolumeclaims ns/data".into(),
            message: "the object has been modified".into(),
        });
        queue.add("ns/data");
        let mut key = queue.get().await.unwrap();
        for backoff in [5, 10, 20] {
            queue.finish(&key, conflict.requeue());
            let early = Duration::from_millis(backoff - 1);
            assert!(
                tokio::time::timeout(early, queue.get()).await.is_err(),
                "decided again before {backoff} ms: a stale cache would spin"
            );
            let due = tokio::time::timeout(Duration::from_millis(2), queue.get()).await;
            key = due.expect("due after the backoff").unwrap();
        }
    }

    /// Counts how often it is serialized.
    struct Counted(Arc<std::sync::atomic::AtomicUsize>, usize);

    impl Serialize for Counted {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            s.collect_seq(std::iter::repeat_n("action", self.1))
        }
    }

    fn guest() -> GuestInfo {
        GuestInfo {
            name: "g".into(),
            digest: "d".into(),
        }
    }

    #[test]
    fn no_decision_is_serialized_when_no_journal_is_kept() {
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let decision = Ok(Counted(count.clone(), 3));
        record_decision(
            &Journal::disabled(),
            "c",
            "k",
            &guest(),
            Value::Null,
            &decision,
        );
        assert_eq!(count.load(std::sync::atomic::Ordering::Relaxed), 0);
    }

    #[test]
    fn a_huge_decision_is_journaled_as_a_bounded_summary() {
        let journal = Journal::new();
        let decision = Ok(Counted(Default::default(), 1_000_000));
        record_decision(&journal, "c", "k", &guest(), Value::Null, &decision);
        let [Entry::Decision { outcome, .. }] = &journal.entries()[..] else {
            panic!("one decision entry")
        };
        let size = outcome.to_string().len();
        assert!(
            size <= crate::budget::JOURNAL_DECISION_BYTES + 256,
            "{size} bytes journaled"
        );
        assert!(outcome.to_string().contains("bytes"), "{outcome}");
    }
}
