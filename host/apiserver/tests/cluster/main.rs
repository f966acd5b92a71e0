//! Optional cluster behaviour (garbage collector, kubelet, PVC-protection admission) and fault
//! injection, one test per kind of fault.

#[path = "../support/mod.rs"]
mod support;

mod faults;
mod gc;
mod kubelet;
