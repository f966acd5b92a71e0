//! The host's metric hooks ([`Observer`], [`QueueMetrics`]) feeding the registry.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use rekon_controllers::decider::GuestInfo;
use rekon_controllers::observe::{DecisionFailure, Observer, ReconcileResult};
use rekon_machinery::queue::QueueMetrics;

use super::Metrics;
use super::labels::{ControllerLabels, GuestLabels, QueueLabels, ResultLabels};

impl Observer for Metrics {
    fn reconciled(&self, controller: &str, result: ReconcileResult, took: Duration) {
        self.reconcile_total
            .get_or_create(&ResultLabels::new(controller, result.label()))
            .inc();
        if result == ReconcileResult::Error {
            self.reconcile_errors
                .get_or_create(&ControllerLabels::new(controller))
                .inc();
        }
        self.reconcile_time
            .get_or_create(&ControllerLabels::new(controller))
            .observe(took.as_secs_f64());
    }

    fn decided(
        &self,
        controller: &str,
        guest: &GuestInfo,
        took: Duration,
        failure: Option<DecisionFailure>,
    ) {
        let labels = GuestLabels::new(controller, &guest.name);
        self.decision_duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        let failures = match failure {
            Some(DecisionFailure::Trap) => &self.guest_traps,
            Some(DecisionFailure::Deadline) => &self.guest_deadline,
            Some(DecisionFailure::Memory) => &self.guest_memory,
            Some(DecisionFailure::Other) | None => return,
        };
        failures.get_or_create(&labels).inc();
    }

    fn reconcile_panicked(&self, controller: &str) {
        self.reconcile_panics
            .get_or_create(&ControllerLabels::new(controller))
            .inc();
    }

    fn controller_enabled(&self, controller: &str, enabled: bool) {
        self.controller_enabled
            .get_or_create(&ControllerLabels::new(controller))
            .set(i64::from(enabled));
    }

    fn queue_metrics(&self, queue: &str) -> Arc<dyn QueueMetrics> {
        let labels = QueueLabels::new(queue);
        Arc::new(QueueObserver {
            depth: self.queue_depth.get_or_create(&labels).clone(),
            adds: self.queue_adds.get_or_create(&labels).clone(),
            queue_duration: self.queue_duration.get_or_create(&labels).clone(),
            work_duration: self.work_duration.get_or_create(&labels).clone(),
            retries: self.queue_retries.get_or_create(&labels).clone(),
        })
    }
}

/// One work queue's series (handles share their values with the registry).
pub struct QueueObserver {
    depth: Gauge,
    adds: Counter,
    queue_duration: Histogram,
    work_duration: Histogram,
    retries: Counter,
}

impl QueueMetrics for QueueObserver {
    fn added(&self) {
        self.adds.inc();
    }

    fn depth(&self, depth: usize) {
        self.depth.set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    fn queue_duration(&self, waited: Duration) {
        self.queue_duration.observe(waited.as_secs_f64());
    }

    fn work_duration(&self, worked: Duration) {
        self.work_duration.observe(worked.as_secs_f64());
    }

    fn retried(&self) {
        self.retries.inc();
    }
}
