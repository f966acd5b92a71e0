//! What a reconcile returns, how it fails, and how its decision is journaled.

use std::time::Instant;

use serde::Serialize;
use serde_json::{Value, json};

use crate::cache::ObjectKey;
use crate::context::Context;
use crate::decider::{DecideError, GuestInfo};
use crate::journal::{Entry, Journal};
use crate::writes::WriteError;

/// What the worker does with the key afterwards (the queue applies it).
pub use rekon_machinery::queue::Outcome;

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// Trap, deadline, memory cap, or a guest that broke the protocol.
    #[error("decision failed: {0}")]
    Guest(String),
    /// The guest asked for something outside the key's scope; nothing was written.
    #[error("action rejected: {0}")]
    Rejected(String),
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A read the decision needed failed (live list or GET).
    #[error("{0}")]
    Transient(String),
    /// The decision stopped on an error it reported itself (e.g. a missing template).
    #[error("{0}")]
    Decision(String),
}

impl ReconcileError {
    /// 409: the decision was made on stale state; decide again, never retry the write.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Write(w) if w.is_conflict())
    }
}

/// Logs a failed reconcile at the level it deserves.
pub fn log_failure(controller: &str, key: &ObjectKey, err: &ReconcileError) {
    if err.is_conflict() {
        tracing::info!(controller, key = %key, error = %err, "conflict: requeued to decide again from fresh state");
    } else {
        tracing::warn!(controller, key = %key, error = %err, "reconcile failed; requeued with backoff");
    }
}

/// Runs one decision, timing it for the observer and journaling it.
pub fn decide<I, D: Serialize>(
    ctx: &Context,
    controller: &str,
    key: &str,
    guest: &GuestInfo,
    input: &I,
    summary: impl FnOnce(&I) -> Value,
    call: impl FnOnce(I) -> Result<D, DecideError>,
) -> Result<D, ReconcileError>
where
    I: Clone,
{
    let started = Instant::now();
    let result = call(input.clone());
    let failure = result.as_ref().err().map(|e| e.failure);
    ctx.observer
        .decided(controller, guest, started.elapsed(), failure);
    record_decision(
        &ctx.journal,
        controller,
        key,
        guest,
        summary(input),
        &result,
    );
    result.map_err(|e| ReconcileError::Guest(e.to_string()))
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
    let outcome = match result {
        Ok(decision) => serde_json::to_value(decision).unwrap_or(Value::Null),
        Err(err) => json!({ "error": err.to_string() }),
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
