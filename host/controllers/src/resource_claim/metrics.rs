//! The upstream controller's metrics: claim creations by outcome, claims by
//! allocation state. Plain atomics here; the metrics endpoint reads them.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct ClaimMetrics {
    pub creates_succeeded: AtomicU64,
    pub creates_failed: AtomicU64,
    pub claims_total: AtomicU64,
    pub claims_allocated: AtomicU64,
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
}
