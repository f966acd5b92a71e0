//! The resource-claim controller's own metrics, under upstream's names, read
//! from its atomics at scrape time.

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use rekon_controllers::host::HostProbe;
use rekon_controllers::resource_claim::ResourceClaimController;

/// Reports nothing until a controller runs on this replica; afterwards the
/// last controller's values (a new leader term restarts the counters, which
/// Prometheus treats as a counter reset).
#[derive(Default)]
pub struct ClaimCollector {
    source: Mutex<Option<HostProbe>>,
}

impl std::fmt::Debug for ClaimCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaimCollector").finish_non_exhaustive()
    }
}

impl ClaimCollector {
    pub fn set_source(&self, host: HostProbe) {
        *self.source.lock().expect("claim collector lock") = Some(host);
    }
}

impl Collector for ClaimCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let host = self.source.lock().expect("claim collector lock").clone();
        let Some(controller) = host.and_then(|h| h.controller::<ResourceClaimController>()) else {
            return Ok(());
        };
        let m = &controller.metrics;
        let succeeded = m.creates_succeeded.load(Ordering::Relaxed);
        let failed = m.creates_failed.load(Ordering::Relaxed);
        let total = m.claims_total.load(Ordering::Relaxed);
        let allocated = m.claims_allocated.load(Ordering::Relaxed);

        let mut creates = encoder.encode_descriptor(
            "resourceclaim_controller_creates",
            "Number of ResourceClaims creation requests, categorized by creation status",
            None,
            MetricType::Counter,
        )?;
        for (status, value) in [("success", succeeded), ("failure", failed)] {
            ConstCounter::new(value).encode(creates.encode_family(&[("status", status)])?)?;
        }

        let mut claims = encoder.encode_descriptor(
            "resourceclaim_controller_resource_claims",
            "Number of ResourceClaims, categorized by allocation status",
            None,
            MetricType::Gauge,
        )?;
        let unallocated = total.saturating_sub(allocated);
        for (state, value) in [("true", allocated), ("false", unallocated)] {
            let value = i64::try_from(value).unwrap_or(i64::MAX);
            ConstGauge::new(value).encode(claims.encode_family(&[("allocated", state)])?)?;
        }
        Ok(())
    }
}
