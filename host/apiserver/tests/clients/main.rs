//! The unmodified clients rekon relies on: kube-runtime's watcher + reflector, `kubectl` and
//! kube-lease-manager (server-side apply and strategic merge patches on Leases).

#[path = "../support/mod.rs"]
mod support;

mod builtin_kinds;
mod custom_resources;
mod kubectl;
mod leases;
mod reflector;
