//! The unmodified clients rekon relies on: kube-runtime's watcher + reflector and `kubectl`.

#[path = "../support/mod.rs"]
mod support;

mod kubectl;
mod reflector;
