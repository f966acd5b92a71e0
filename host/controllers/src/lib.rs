//! The controllers: which events enqueue which keys, how a key becomes a decision
//! input, and how the decision's actions are validated and written.

pub mod cache;
pub mod context;
pub mod decider;
pub mod host;
pub mod journal;
pub mod observe;
pub mod projection;
pub mod pvc_protection;
pub mod reconcile;
pub mod resource_claim;
pub mod validate;
pub mod writes;
