//! How a decision fails: [`RuntimeError`] names the guest and the key, and
//! [`Failure`] says what went wrong (trap, deadline, memory cap, ...).

use std::time::Duration;

use crate::id::GuestId;

/// A decision that failed, naming the guest and, when the caller attached it,
/// the key being reconciled.
#[derive(Debug, thiserror::Error)]
#[error("guest {guest}{}: {failure}", key_suffix(.key))]
pub struct RuntimeError {
    pub guest: GuestId,
    pub key: Option<String>,
    pub failure: Failure,
}

#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("deadline of {0:?} exceeded")]
    DeadlineExceeded(Duration),
    #[error("memory cap of {cap} bytes exceeded (asked for {requested} bytes)")]
    MemoryCapExceeded { cap: usize, requested: usize },
    /// `message` is the trap itself; `detail` adds the wasm backtrace.
    #[error("{message}{}", stderr_suffix(.stderr))]
    Trap {
        message: String,
        stderr: String,
        detail: String,
    },
    /// The decision (or one import call's arguments) was larger than
    /// [`crate::Limits::result_bytes`]; it was not copied out.
    #[error("result too large: more than {limit} bytes copied out of the guest in one call")]
    ResultTooLarge { limit: usize },
    #[error("cannot instantiate: {0}")]
    Instantiate(String),
    #[error("is a {world} guest and does not export `{decision}`")]
    /// `world` is the name of the world the guest exports.
    WrongWorld {
        world: &'static str,
        decision: String,
    },
}

fn key_suffix(key: &Option<String>) -> String {
    key.as_ref()
        .map(|k| format!(" (key {k})"))
        .unwrap_or_default()
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; guest stderr: {stderr}")
    }
}

impl RuntimeError {
    /// Names the key whose reconcile this decision was for.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
}
