//! The controllers and their runtime: which events enqueue which keys, how a key
//! becomes a decision input (decided on the blocking decision pool), and how the
//! decision's actions are validated and written.
//!
//! A controller is a [`reconciler::Reconciler`] listed in
//! [`builtin::CONTROLLERS`]; the [`host::Host`] runs every selected one.
//! The generic modules below know controllers only through that list.

// The generic runtime: nothing here names a controller.
pub mod budget;
pub mod cache;
pub mod context;
pub mod decider;
pub mod events;
pub mod fence;
pub mod generic;
pub mod host;
pub mod journal;
mod live_lists;
pub mod observe;
pub mod pool;
pub mod projection;
pub mod reconcile;
pub mod reconciler;
mod running;
pub mod selection;
pub mod validate;
pub mod watches;
pub mod writes;

// One folder per controller, each with the same parts: `mod.rs` (the
// controller and its reconcile), `keys.rs` (which keys a watch event
// enqueues, by the pure rules of its `rules.rs`), `validate` (the pure plan of
// a decision's writes), and what only
// it uses (pvc-protection's live pod lists, resource-claim's metrics and its
// pod and claim keys). `builtin` lists them.
pub mod builtin;
pub mod ephemeral_volume;
pub mod pvc_protection;
pub mod resource_claim;
