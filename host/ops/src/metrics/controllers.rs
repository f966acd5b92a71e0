//! Each running controller's own metric families (resource-claim's, under
//! upstream's names), read from the controllers at scrape time.

use std::sync::Mutex;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use rekon_controllers::host::HostProbe;
use rekon_controllers::observe::MetricKind;

/// Reports nothing until a host runs on this replica; afterwards the last
/// host's controllers' values (a new leader term restarts the counters, which
/// Prometheus treats as a counter reset).
#[derive(Default)]
pub struct ControllerCollector {
    source: Mutex<Option<HostProbe>>,
}

impl std::fmt::Debug for ControllerCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerCollector")
            .finish_non_exhaustive()
    }
}

impl ControllerCollector {
    pub fn set_source(&self, host: HostProbe) {
        *self.source.lock().expect("controller collector lock") = Some(host);
    }
}

impl Collector for ControllerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let host = self
            .source
            .lock()
            .expect("controller collector lock")
            .clone();
        let Some(host) = host else {
            return Ok(());
        };
        for family in host.metrics() {
            let kind = match family.kind {
                MetricKind::Counter => MetricType::Counter,
                MetricKind::Gauge => MetricType::Gauge,
            };
            let mut descriptor = encoder.encode_descriptor(family.name, family.help, None, kind)?;
            for (label, value) in family.samples {
                let labels = [(family.label, label)];
                let sample = descriptor.encode_family(&labels)?;
                match family.kind {
                    MetricKind::Counter => ConstCounter::new(value).encode(sample)?,
                    MetricKind::Gauge => {
                        ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX)).encode(sample)?
                    }
                }
            }
        }
        Ok(())
    }
}
