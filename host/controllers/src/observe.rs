//! Hooks for metrics: the host reports reconciles, decisions and queue activity
//! to an [`Observer`]; the default observes nothing. A controller's own metric
//! families ([`MetricFamily`]) are read from it at scrape time.

use std::sync::Arc;
use std::time::Duration;

use rekon_machinery::queue::{NoMetrics, QueueMetrics};

use crate::decider::GuestInfo;

/// controller-runtime's `result` label values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileResult {
    Success,
    Error,
    RequeueAfter,
}

impl ReconcileResult {
    pub fn label(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::RequeueAfter => "requeue_after",
        }
    }
}

/// Why a decision produced no result, for per-guest failure counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionFailure {
    Trap,
    Deadline,
    Memory,
    Other,
}

/// How a [`MetricFamily`] is exposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Counter,
    Gauge,
}

/// One of a controller's own metric families, under the upstream controller's
/// name and help, read at scrape time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricFamily {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: MetricKind,
    /// The one label of the family.
    pub label: &'static str,
    /// Each sample: its value of [`Self::label`] and its value.
    pub samples: Vec<(&'static str, u64)>,
}

pub trait Observer: Send + Sync {
    fn reconciled(&self, _controller: &str, _result: ReconcileResult, _took: Duration) {}
    fn decided(
        &self,
        _controller: &str,
        _guest: &GuestInfo,
        _took: Duration,
        _failure: Option<DecisionFailure>,
    ) {
    }
    /// A reconcile of `controller` panicked (its key was requeued).
    fn reconcile_panicked(&self, _controller: &str) {}
    /// `controller` runs (true) or is disabled or waits for its API (false).
    fn controller_enabled(&self, _controller: &str, _enabled: bool) {}
    /// Metrics hooks for the work queue named `queue`.
    fn queue_metrics(&self, _queue: &str) -> Arc<dyn QueueMetrics> {
        Arc::new(NoMetrics)
    }
}

/// Observes nothing.
pub struct NoObserver;
impl Observer for NoObserver {}
