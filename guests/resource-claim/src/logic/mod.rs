//! The DRA ResourceClaim controller's decisions (upstream-behaviour §3), as plain
//! Rust over [`rekon_guest::model`].
//!
//! - [`decide_pod`] (pod key, §3.4–3.6): which claims to generate from the pod's
//!   templates, which orphans to adopt, the complete `resourceClaimStatuses`, and
//!   reservations for pods that were scheduled without the scheduler.
//! - [`decide_claim`] (claim key, §3.7): which pods to drop from `reservedFor`,
//!   when to clear the allocation and the builtin finalizer, and when to delete a
//!   generated claim whose pod is done.
//!
//! Behaviour follows the ≥1.34 upstream controller (structured parameters, builtin
//! finalizer, non-pod `reservedFor` entries kept); deliberate deviations are
//! marked `Deviation:` where they are made.

mod claim;
mod pod;

pub use claim::decide_claim;
pub use pod::{PodClaimError, decide_pod};
pub use rekon_guest::generated_claim::{POD_CLAIM_NAME_ANNOTATION, generate_name};

/// The builtin finalizer the scheduler sets before it writes an allocation.
pub const DELETE_PROTECTION_FINALIZER: &str = "resource.kubernetes.io/delete-protection";

#[cfg(test)]
mod fixtures;
