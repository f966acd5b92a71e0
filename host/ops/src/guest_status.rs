//! What the module manager (hot swap, shadow evaluation) reports for
//! `rekon_guest_info` and `rekon_shadow_decisions`.

/// How a shadow module's decision compared with the active module's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShadowOutcome {
    Agree,
    Differ,
    /// Not run: the shadow budget was full.
    Dropped,
}

impl ShadowOutcome {
    pub fn label(self) -> &'static str {
        match self {
            Self::Agree => "agree",
            Self::Differ => "differ",
            Self::Dropped => "dropped",
        }
    }
}

/// Fed by whoever publishes decision modules. [`crate::Metrics`] implements it.
pub trait GuestStatus: Send + Sync {
    /// `controller` now decides with `guest` at `digest` (`sha256:<hex>`),
    /// which exports `contract` (`rekon:reconcile@0.2.0`); replaces the
    /// controller's previous `rekon_guest_info` series.
    fn active_module(&self, controller: &str, guest: &str, digest: &str, contract: &str);
    /// One shadow decision was compared with the active one.
    fn shadow_decision(&self, controller: &str, outcome: ShadowOutcome);
    /// `controller` has no module any more (its `DecisionModule` is gone):
    /// its `rekon_guest_info` series goes away.
    fn module_withdrawn(&self, _controller: &str) {}
}

/// Reports nowhere (tests, tools without a metrics endpoint).
pub struct NoGuestStatus;

impl GuestStatus for NoGuestStatus {
    fn active_module(&self, _controller: &str, _guest: &str, _digest: &str, _contract: &str) {}
    fn shadow_decision(&self, _controller: &str, _outcome: ShadowOutcome) {}
}
