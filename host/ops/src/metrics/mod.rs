//! The Prometheus registry behind `/metrics`: controller-runtime's reconcile and
//! work-queue families, client-go's leader-election gauge, rekon's per-guest
//! families and each controller's own families (resource-claim's counters).
//!
//! Names and labels follow controller-runtime so existing dashboards and alerts
//! work unchanged. prometheus-client appends `_total` to counters when encoding,
//! so counters are registered without it.

mod controllers;
mod labels;
mod observer;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use rekon_controllers::host::HostProbe;

use crate::guest_status::{GuestStatus, ShadowOutcome};
use controllers::ControllerCollector;
use labels::{
    ControllerLabels, GuestInfoLabels, GuestLabels, QueueLabels, ResultLabels, ShadowLabels,
};
pub use observer::QueueObserver;

/// The content type of the OpenMetrics text exposition (Prometheus negotiates it).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// controller-runtime's reconcile-time buckets (seconds).
const RECONCILE_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_BUCKETS)
}

/// controller-runtime's work-queue buckets: 10 ns to 1000 s, ×10.
fn queue_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 12))
}

/// Decisions take microseconds: 1 µs to ~4 s, ×4.
fn decision_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-6, 4.0, 12))
}

/// Every metric family rekon exports.
pub struct Metrics {
    registry: Registry,
    reconcile_total: Family<ResultLabels, Counter>,
    reconcile_errors: Family<ControllerLabels, Counter>,
    reconcile_time: HistogramFamily<ControllerLabels>,
    queue_depth: Family<QueueLabels, Gauge>,
    queue_adds: Family<QueueLabels, Counter>,
    queue_duration: HistogramFamily<QueueLabels>,
    work_duration: HistogramFamily<QueueLabels>,
    queue_retries: Family<QueueLabels, Counter>,
    leader_status: Family<QueueLabels, Gauge>,
    decision_duration: HistogramFamily<GuestLabels>,
    guest_traps: Family<GuestLabels, Counter>,
    guest_deadline: Family<GuestLabels, Counter>,
    guest_memory: Family<GuestLabels, Counter>,
    guest_info: Family<GuestInfoLabels, Gauge>,
    shadow_decisions: Family<ShadowLabels, Counter>,
    reconcile_panics: Family<ControllerLabels, Counter>,
    controller_enabled: Family<ControllerLabels, Gauge>,
    /// The `rekon_guest_info` series currently set, by controller.
    active_modules: Mutex<HashMap<String, GuestInfoLabels>>,
    controllers: Arc<ControllerCollector>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut metrics = Self {
            registry: Registry::default(),
            reconcile_total: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_time: Family::new_with_constructor(reconcile_histogram),
            queue_depth: Family::default(),
            queue_adds: Family::default(),
            queue_duration: Family::new_with_constructor(queue_histogram),
            work_duration: Family::new_with_constructor(queue_histogram),
            queue_retries: Family::default(),
            leader_status: Family::default(),
            decision_duration: Family::new_with_constructor(decision_histogram),
            guest_traps: Family::default(),
            guest_deadline: Family::default(),
            guest_memory: Family::default(),
            guest_info: Family::default(),
            shadow_decisions: Family::default(),
            reconcile_panics: Family::default(),
            controller_enabled: Family::default(),
            active_modules: Mutex::default(),
            controllers: Arc::new(ControllerCollector::default()),
        };
        metrics.register();
        metrics
    }

    fn register(&mut self) {
        let r = &mut self.registry;
        r.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            self.reconcile_total.clone(),
        );
        r.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            self.reconcile_errors.clone(),
        );
        r.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            self.reconcile_time.clone(),
        );
        r.register(
            "workqueue_depth",
            "Current depth of workqueue",
            self.queue_depth.clone(),
        );
        r.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            self.queue_adds.clone(),
        );
        r.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            self.queue_duration.clone(),
        );
        r.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            self.work_duration.clone(),
        );
        r.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            self.queue_retries.clone(),
        );
        r.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease",
            self.leader_status.clone(),
        );
        r.register(
            "rekon_decision_duration_seconds",
            "Time one guest decision took, per controller and guest",
            self.decision_duration.clone(),
        );
        r.register(
            "rekon_guest_traps",
            "Guest decisions that trapped",
            self.guest_traps.clone(),
        );
        r.register(
            "rekon_guest_deadline_exceeded",
            "Guest decisions stopped at their epoch deadline",
            self.guest_deadline.clone(),
        );
        r.register(
            "rekon_guest_memory_exceeded",
            "Guest decisions that hit their memory cap",
            self.guest_memory.clone(),
        );
        r.register(
            "rekon_guest_info",
            "The active decision module of each controller (value 1), by guest name, digest and WIT contract",
            self.guest_info.clone(),
        );
        r.register(
            "rekon_shadow_decisions",
            "Shadow decisions compared with the active module's, by agreement (dropped: not run, the shadow budget was full)",
            self.shadow_decisions.clone(),
        );
        r.register(
            "rekon_reconcile_panics",
            "Reconciles that panicked (their key was requeued with backoff), per controller",
            self.reconcile_panics.clone(),
        );
        r.register(
            "rekon_controller_enabled",
            "1 while the controller runs; 0 when --controllers disables it, the server does not serve its API yet or its world has no decision module yet",
            self.controller_enabled.clone(),
        );
        r.register_collector(Box::new(self.controllers.clone()));
    }

    /// Creates every label set of a controller with zero values, as
    /// controller-runtime does, so rates exist before the first reconcile.
    pub fn register_controller(&self, controller: &str) {
        for result in ["success", "error", "requeue", "requeue_after"] {
            let _ = self
                .reconcile_total
                .get_or_create(&ResultLabels::new(controller, result));
        }
        let _ = self
            .reconcile_errors
            .get_or_create(&ControllerLabels::new(controller));
    }

    /// Sets `leader_election_master_status{name=lease}`.
    pub fn set_leader(&self, lease: &str, leading: bool) {
        self.leader_status
            .get_or_create(&QueueLabels::new(lease))
            .set(i64::from(leading));
    }

    /// The host whose controllers' own counters `/metrics` reports from now on
    /// (a new one each time this replica starts leading).
    pub fn watch_host(&self, host: HostProbe) {
        self.controllers.set_source(host);
    }

    /// The whole registry in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing metrics into a String cannot fail");
        out
    }
}

impl GuestStatus for Metrics {
    fn active_module(&self, controller: &str, guest: &str, digest: &str, contract: &str) {
        let current = GuestInfoLabels::new(controller, guest, digest, contract);
        // One series per controller: the previous module's series goes away.
        let previous = self
            .active_modules
            .lock()
            .expect("active modules lock")
            .insert(controller.to_string(), current.clone());
        if let Some(previous) = previous.filter(|p| *p != current) {
            self.guest_info.remove(&previous);
        }
        self.guest_info.get_or_create(&current).set(1);
    }

    fn module_withdrawn(&self, controller: &str) {
        let previous = self
            .active_modules
            .lock()
            .expect("active modules lock")
            .remove(controller);
        if let Some(previous) = previous {
            self.guest_info.remove(&previous);
        }
    }

    fn shadow_decision(&self, controller: &str, outcome: ShadowOutcome) {
        self.shadow_decisions
            .get_or_create(&ShadowLabels::new(controller, outcome.label()))
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rekon_controllers::decider::GuestInfo;
    use rekon_controllers::observe::{DecisionFailure, Observer, ReconcileResult};

    use super::*;

    /// The value of the sample line that starts with `series` (name and labels).
    fn sample(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    fn guest(name: &str) -> GuestInfo {
        GuestInfo {
            name: name.into(),
            digest: "sha256:aa".into(),
        }
    }

    #[test]
    fn reconciles_are_counted_by_controller_and_result() {
        let m = Metrics::new();
        m.register_controller("pvc-protection");
        let text = m.encode();
        let success =
            r#"controller_runtime_reconcile_total{controller="pvc-protection",result="success"}"#;
        assert_eq!(
            sample(&text, success),
            Some(0.0),
            "pre-registered at zero:\n{text}"
        );

        m.reconciled(
            "pvc-protection",
            ReconcileResult::Success,
            Duration::from_millis(3),
        );
        m.reconciled(
            "pvc-protection",
            ReconcileResult::Error,
            Duration::from_millis(30),
        );
        let text = m.encode();
        assert_eq!(sample(&text, success), Some(1.0));
        let error =
            r#"controller_runtime_reconcile_total{controller="pvc-protection",result="error"}"#;
        assert_eq!(sample(&text, error), Some(1.0));
        let errors = r#"controller_runtime_reconcile_errors_total{controller="pvc-protection"}"#;
        assert_eq!(sample(&text, errors), Some(1.0));
        let count =
            r#"controller_runtime_reconcile_time_seconds_count{controller="pvc-protection"}"#;
        assert_eq!(sample(&text, count), Some(2.0));
        let fast = r#"controller_runtime_reconcile_time_seconds_bucket{le="0.005",controller="pvc-protection"}"#;
        assert_eq!(
            sample(&text, fast),
            Some(1.0),
            "3 ms falls in the first bucket:\n{text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn queue_hooks_feed_the_workqueue_families() {
        let m = Metrics::new();
        let q = m.queue_metrics("resource-claim");
        q.added();
        q.added();
        q.depth(1);
        q.retried();
        q.queue_duration(Duration::from_micros(50));
        q.work_duration(Duration::from_millis(2));
        let text = m.encode();
        assert_eq!(
            sample(&text, r#"workqueue_adds_total{name="resource-claim"}"#),
            Some(2.0)
        );
        assert_eq!(
            sample(&text, r#"workqueue_depth{name="resource-claim"}"#),
            Some(1.0)
        );
        assert_eq!(
            sample(&text, r#"workqueue_retries_total{name="resource-claim"}"#),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"workqueue_queue_duration_seconds_count{name="resource-claim"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"workqueue_work_duration_seconds_sum{name="resource-claim"}"#
            ),
            Some(0.002)
        );
    }

    #[test]
    fn decision_failures_are_counted_per_guest_and_kind() {
        let m = Metrics::new();
        let g = guest("pvc-v2");
        m.decided("pvc-protection", &g, Duration::from_micros(20), None);
        m.decided(
            "pvc-protection",
            &g,
            Duration::from_micros(20),
            Some(DecisionFailure::Trap),
        );
        m.decided(
            "pvc-protection",
            &g,
            Duration::from_millis(100),
            Some(DecisionFailure::Deadline),
        );
        m.decided(
            "pvc-protection",
            &g,
            Duration::from_micros(5),
            Some(DecisionFailure::Memory),
        );
        m.decided(
            "pvc-protection",
            &g,
            Duration::from_micros(5),
            Some(DecisionFailure::Other),
        );
        let text = m.encode();
        let labels = r#"{controller="pvc-protection",guest="pvc-v2"}"#;
        assert_eq!(
            sample(
                &text,
                &format!("rekon_decision_duration_seconds_count{labels}")
            ),
            Some(5.0)
        );
        assert_eq!(
            sample(&text, &format!("rekon_guest_traps_total{labels}")),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                &format!("rekon_guest_deadline_exceeded_total{labels}")
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(&text, &format!("rekon_guest_memory_exceeded_total{labels}")),
            Some(1.0)
        );
    }

    #[test]
    fn the_info_metric_follows_the_active_module() {
        let m = Metrics::new();
        m.active_module(
            "pvc-protection",
            "pvc",
            "sha256:01",
            "rekon:reconcile@0.1.0",
        );
        m.active_module(
            "resource-claim",
            "claim",
            "sha256:02",
            "rekon:reconcile@0.1.0",
        );
        m.active_module(
            "pvc-protection",
            "pvc",
            "sha256:03",
            "rekon:reconcile@0.2.0",
        );
        let text = m.encode();
        let mut info: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("rekon_guest_info{"))
            .collect();
        info.sort();
        assert_eq!(
            info,
            [
                r#"rekon_guest_info{controller="pvc-protection",guest="pvc",digest="sha256:03",contract="rekon:reconcile@0.2.0"} 1"#,
                r#"rekon_guest_info{controller="resource-claim",guest="claim",digest="sha256:02",contract="rekon:reconcile@0.1.0"} 1"#,
            ],
            "one series per controller, the swapped-out digest gone:\n{text}"
        );
        assert!(!text.contains("sha256:01"));
    }

    #[test]
    fn shadow_decisions_and_leadership_are_reported() {
        let m = Metrics::new();
        m.shadow_decision("resource-claim", ShadowOutcome::Agree);
        m.shadow_decision("resource-claim", ShadowOutcome::Agree);
        m.shadow_decision("resource-claim", ShadowOutcome::Differ);
        m.set_leader("rekon-controllers", true);
        let text = m.encode();
        assert_eq!(
            sample(
                &text,
                r#"rekon_shadow_decisions_total{controller="resource-claim",result="agree"}"#
            ),
            Some(2.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"rekon_shadow_decisions_total{controller="resource-claim",result="differ"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            sample(
                &text,
                r#"leader_election_master_status{name="rekon-controllers"}"#
            ),
            Some(1.0)
        );
        m.set_leader("rekon-controllers", false);
        assert_eq!(
            sample(
                &m.encode(),
                r#"leader_election_master_status{name="rekon-controllers"}"#
            ),
            Some(0.0)
        );
    }
}
