//! kube-controller-manager's pv-protection controller as a module of the
//! generic `controller` world (0.3.0): no host code names it.
//!
//! [`logic`] holds the description and the decision as plain Rust; it runs
//! natively in tests. Built for wasm32, the crate exports it as the
//! `controller` interface of `rekon:reconcile/controller@0.3.0`.

pub mod logic;

rekon_guest::export_controller!(crate::logic);
