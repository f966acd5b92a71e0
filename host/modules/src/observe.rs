//! Hooks for metrics: which version serves each controller (a world's or a
//! controller module's, by name), and every shadow verdict. The status
//! ([`crate::Modules::status`]) has the same numbers as totals; these are for
//! push-style metrics.

use rekon_controllers::decider::{GuestInfo, ShadowVerdict};

pub trait ModulesObserver: Send + Sync {
    /// `controller` decides with `guest`, which exports `contract`
    /// (`rekon:reconcile@0.2.0`), from now on (first load, swap, rollback).
    fn activated(&self, _controller: &str, _guest: &GuestInfo, _contract: &str) {}
    /// One shadow decision of `controller` was compared with the active one.
    fn shadow_verdict(&self, _controller: &str, _verdict: ShadowVerdict) {}
    /// `controller` has no module any more: nothing names its world.
    fn withdrawn(&self, _controller: &str) {}
}

/// Observes nothing.
pub struct NoModulesObserver;

impl ModulesObserver for NoModulesObserver {}
