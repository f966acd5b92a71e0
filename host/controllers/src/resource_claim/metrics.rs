//! The upstream controller's metrics: claim creations by outcome, claims by
//! allocation state. Plain atomics here; `/metrics` reads them through
//! [`ClaimMetrics::families`], under upstream's names.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::observe::{MetricFamily, MetricKind};

#[derive(Debug, Default)]
pub struct ClaimMetrics {
    creates_succeeded: AtomicU64,
    creates_failed: AtomicU64,
    claims_total: AtomicU64,
    claims_allocated: AtomicU64,
}

impl ClaimMetrics {
    pub fn record_create(&self, ok: bool) {
        let counter = if ok {
            &self.creates_succeeded
        } else {
            &self.creates_failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn set_claims(&self, total: usize, allocated: usize) {
        self.claims_total.store(total as u64, Ordering::Relaxed);
        self.claims_allocated
            .store(allocated as u64, Ordering::Relaxed);
    }

    /// The families kube-controller-manager's resource-claim controller exports.
    pub fn families(&self) -> Vec<MetricFamily> {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let allocated = load(&self.claims_allocated);
        let unallocated = load(&self.claims_total).saturating_sub(allocated);
        vec![
            MetricFamily {
                name: "resourceclaim_controller_creates",
                help: "Number of ResourceClaims creation requests, categorized by creation status",
                kind: MetricKind::Counter,
                label: "status",
                samples: vec![
                    ("success", load(&self.creates_succeeded)),
                    ("failure", load(&self.creates_failed)),
                ],
            },
            MetricFamily {
                name: "resourceclaim_controller_resource_claims",
                help: "Number of ResourceClaims, categorized by allocation status",
                kind: MetricKind::Gauge,
                label: "allocated",
                samples: vec![("true", allocated), ("false", unallocated)],
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_count_creates_and_split_claims_by_allocation() {
        let metrics = ClaimMetrics::default();
        metrics.record_create(true);
        metrics.record_create(true);
        metrics.record_create(false);
        metrics.set_claims(5, 2);
        let families = metrics.families();
        assert_eq!(families[0].samples, [("success", 2), ("failure", 1)]);
        assert_eq!(families[1].samples, [("true", 2), ("false", 3)]);
    }
}
