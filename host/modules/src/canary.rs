//! Before a new version serves, it decides the recent inputs of the version it
//! replaces: a module that traps, overruns its deadline or its memory cap on
//! any of them is refused. Decisions that merely differ are allowed (that is
//! what a new version is for); shadow mode measures those.

use rekon_controllers::decider::{DecideError, Decider};
use rekon_controllers::observe::DecisionFailure;
use rekon_runtime::GuestWorld;

use crate::version::ModuleVersion;

#[derive(Debug, thiserror::Error)]
#[error(
    "failed on the recorded input of key {key} (canary replay of {replayed} recent inputs): {message}"
)]
pub struct CanaryFailure {
    pub key: String,
    pub replayed: usize,
    pub message: String,
}

/// Replays `inputs` on `version`; returns how many it decided. Blocking.
pub fn replay<W: GuestWorld>(
    version: &ModuleVersion,
    inputs: &[(String, W::Input)],
) -> Result<usize, CanaryFailure> {
    for (done, (key, input)) in inputs.iter().enumerate() {
        let result = Decider::<W>::decide(version, key, input.clone());
        if let Err(DecideError {
            message, failure, ..
        }) = result
            && failure != DecisionFailure::Other
        {
            return Err(CanaryFailure {
                key: key.clone(),
                replayed: done + 1,
                message,
            });
        }
    }
    Ok(inputs.len())
}
