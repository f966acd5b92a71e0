//! The `rekon:reconcile@0.2.0` per-world projections as plain Rust.
//!
//! 0.2.0 sends each decision only what it reads. The host keeps one model
//! ([`crate::model`], what its caches hold) and projects it here at the boundary;
//! a guest's logic decides on these types, natively (tests, benches) and inside a
//! component alike. Each projection is a `From<model::…>` that moves, never clones.

pub mod claim;
pub mod pvc;
