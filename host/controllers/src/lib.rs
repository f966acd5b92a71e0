//! The controllers and their runtime: which events enqueue which keys, how a key
//! becomes a decision input (decided on the blocking decision pool), and how the
//! decision's actions are validated and written.
//!
//! A controller is a [`reconciler::Reconciler`] listed in
//! [`registry::CONTROLLERS`]; the [`host::Host`] runs every selected one.

pub mod budget;
pub mod cache;
pub mod context;
pub mod decider;
pub mod ephemeral_volume;
pub mod fence;
pub mod host;
pub mod journal;
mod live_pods;
pub mod observe;
pub mod pool;
pub mod projection;
pub mod pvc_protection;
pub mod reconcile;
pub mod reconciler;
pub mod registry;
pub mod resource_claim;
pub mod validate;
pub mod watches;
pub mod writes;
