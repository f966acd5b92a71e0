//! Who makes the decisions: a guest component, or the same logic linked natively.
//!
//! Controllers only see these traits. The active implementation sits in a
//! [`Slot`] (an atomic pointer), so a new module version is published with one
//! store and decisions in flight finish on the version they loaded.

use std::sync::Arc;

use arc_swap::ArcSwap;
use rekon_guest::model::{
    ClaimDecision, ClaimInput, PodDecision, PodInput, PvcDecision, PvcInput,
};

/// Which module made a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestInfo {
    pub name: String,
    /// `sha256:<hex>` of the module, or `native` for linked-in logic.
    pub digest: String,
}

/// A decision that produced no result: trap, deadline, memory cap, bad module.
#[derive(Debug, thiserror::Error)]
#[error("guest {guest}: {message}")]
pub struct DecideError {
    pub guest: String,
    pub message: String,
    pub failure: crate::observe::DecisionFailure,
}

pub trait PvcDecider: Send + Sync {
    fn info(&self) -> GuestInfo;
    fn decide(&self, key: &str, input: PvcInput) -> Result<PvcDecision, DecideError>;
}

pub trait ClaimDecider: Send + Sync {
    fn info(&self) -> GuestInfo;
    fn decide_pod(&self, key: &str, input: PodInput) -> Result<PodDecision, DecideError>;
    fn decide_claim(&self, key: &str, input: ClaimInput) -> Result<ClaimDecision, DecideError>;
}

/// The active decider of one controller, swappable while decisions run.
pub struct Slot<T: ?Sized>(ArcSwap<Arc<T>>);

impl<T: ?Sized> Slot<T> {
    pub fn new(decider: Arc<T>) -> Self {
        Self(ArcSwap::from_pointee(decider))
    }

    /// The decider to use for one whole decision (kept even if a swap happens).
    pub fn current(&self) -> Arc<T> {
        Arc::clone(&self.0.load())
    }

    /// Publishes a new decider; returns the previous one.
    pub fn swap(&self, decider: Arc<T>) -> Arc<T> {
        Arc::clone(&self.0.swap(Arc::new(decider)))
    }
}

/// The reference logic linked into the host: same decisions, no sandbox.
/// Used to compare wasm against native throughput and as a fallback in tests.
pub struct Native;

fn native_info(name: &str) -> GuestInfo {
    GuestInfo {
        name: name.to_string(),
        digest: "native".to_string(),
    }
}

impl PvcDecider for Native {
    fn info(&self) -> GuestInfo {
        native_info("pvc-protection")
    }

    fn decide(&self, _key: &str, input: PvcInput) -> Result<PvcDecision, DecideError> {
        Ok(rekon_guest_pvc_protection::logic::decide(&input))
    }
}

impl ClaimDecider for Native {
    fn info(&self) -> GuestInfo {
        native_info("resource-claim")
    }

    fn decide_pod(&self, _key: &str, input: PodInput) -> Result<PodDecision, DecideError> {
        Ok(rekon_guest_resource_claim::logic::decide_pod(&input))
    }

    fn decide_claim(&self, _key: &str, input: ClaimInput) -> Result<ClaimDecision, DecideError> {
        Ok(rekon_guest_resource_claim::logic::decide_claim(&input))
    }
}

fn guest_info(guest: &rekon_runtime::GuestPre) -> GuestInfo {
    GuestInfo {
        name: guest.id().name().to_string(),
        digest: guest.id().digest().to_string(),
    }
}

fn guest_error(key: &str, err: rekon_runtime::RuntimeError) -> DecideError {
    use crate::observe::DecisionFailure;
    use rekon_runtime::Failure;
    let failure = match &err.failure {
        Failure::Trap { .. } => DecisionFailure::Trap,
        Failure::DeadlineExceeded(_) => DecisionFailure::Deadline,
        Failure::MemoryCapExceeded { .. } => DecisionFailure::Memory,
        _ => DecisionFailure::Other,
    };
    DecideError {
        guest: err.guest.name().to_string(),
        message: err.with_key(key).to_string(),
        failure,
    }
}

/// A loaded component decides (a fresh, limited store per decision).
impl PvcDecider for rekon_runtime::GuestPre {
    fn info(&self) -> GuestInfo {
        guest_info(self)
    }

    fn decide(&self, key: &str, input: PvcInput) -> Result<PvcDecision, DecideError> {
        self.decide_pvc(input).map_err(|e| guest_error(key, e))
    }
}

impl ClaimDecider for rekon_runtime::GuestPre {
    fn info(&self) -> GuestInfo {
        guest_info(self)
    }

    fn decide_pod(&self, key: &str, input: PodInput) -> Result<PodDecision, DecideError> {
        rekon_runtime::GuestPre::decide_pod(self, input).map_err(|e| guest_error(key, e))
    }

    fn decide_claim(&self, key: &str, input: ClaimInput) -> Result<ClaimDecision, DecideError> {
        rekon_runtime::GuestPre::decide_claim(self, input).map_err(|e| guest_error(key, e))
    }
}
