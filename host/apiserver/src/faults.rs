//! Fault injection (issue item 6): seeded, per verb and resource. The HTTP layer asks the
//! injector before each request and each watch; the server runs the periodic compaction.
//!
//! Configured in Rust with the builders below or from YAML/JSON, e.g.:
//!
//! ```yaml
//! seed: 7
//! requests:
//!   - verbs: [update, patch]
//!     resources: [persistentvolumeclaims]
//!     conflict: 0.2          # fraction answered 409 Conflict
//!     serverError: 0.05      # 500
//!     tooManyRequests: 0.05  # 429 with Retry-After
//!     latencyMs: 10
//!   - verbs: [create]
//!     lostResponse: 0.1      # applied, but the connection drops before the answer
//! watches:
//!   - resources: [pods]
//!     dropEvents: 0.1        # fraction of live events never sent
//!     delayMs: 500           # events reach the watcher this late (a lagging cache)
//!     closeAfterEvents: 20   # the stream ends after this many events
//! compaction:
//!   everyMs: 2000            # drop the watch history periodically (410 on the next watch)
//!   beforeWatch: 0.1         # fraction of watch requests that find the history compacted
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::errors::ApiError;
use crate::resources::ResourceInfo;

#[derive(Debug, thiserror::Error)]
pub enum FaultsError {
    #[error("cannot read fault configuration {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid fault configuration {path}: {source}")]
    Parse {
        path: String,
        source: serde_yaml::Error,
    },
    #[error("invalid fault configuration: {0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    Create,
    Update,
    Patch,
    Delete,
    List,
    Get,
    Watch,
}

/// Faults answered instead of (or added to) ordinary requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RequestFault {
    /// Verbs this rule applies to; empty = all.
    pub verbs: Vec<Verb>,
    /// Resources (plural, or `plural.group`); empty = all.
    pub resources: Vec<String>,
    pub conflict: f64,
    pub server_error: f64,
    pub too_many_requests: f64,
    pub retry_after_seconds: Option<u64>,
    pub latency_ms: u64,
    /// Fraction of successful writes whose answer is lost: the write is applied,
    /// then the connection drops mid-response (the client cannot tell the outcome).
    pub lost_response: f64,
}

impl RequestFault {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn verbs(mut self, verbs: impl IntoIterator<Item = Verb>) -> Self {
        self.verbs = verbs.into_iter().collect();
        self
    }
    pub fn resources<S: Into<String>>(mut self, resources: impl IntoIterator<Item = S>) -> Self {
        self.resources = resources.into_iter().map(Into::into).collect();
        self
    }
    pub fn conflict(mut self, fraction: f64) -> Self {
        self.conflict = fraction;
        self
    }
    pub fn server_error(mut self, fraction: f64) -> Self {
        self.server_error = fraction;
        self
    }
    pub fn too_many_requests(mut self, fraction: f64, retry_after_seconds: u64) -> Self {
        self.too_many_requests = fraction;
        self.retry_after_seconds = Some(retry_after_seconds);
        self
    }
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency_ms = latency.as_millis() as u64;
        self
    }
    pub fn lost_response(mut self, fraction: f64) -> Self {
        self.lost_response = fraction;
        self
    }
}

/// Faults of watch streams.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct WatchFault {
    /// Resources (plural, or `plural.group`); empty = all.
    pub resources: Vec<String>,
    pub drop_events: f64,
    pub delay_ms: u64,
    pub close_after_events: Option<usize>,
}

impl WatchFault {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn resources<S: Into<String>>(mut self, resources: impl IntoIterator<Item = S>) -> Self {
        self.resources = resources.into_iter().map(Into::into).collect();
        self
    }
    pub fn drop_events(mut self, fraction: f64) -> Self {
        self.drop_events = fraction;
        self
    }
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay_ms = delay.as_millis() as u64;
        self
    }
    pub fn close_after_events(mut self, events: usize) -> Self {
        self.close_after_events = Some(events);
        self
    }
}

/// Forced history compaction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CompactionFault {
    pub every_ms: Option<u64>,
    pub before_watch: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct FaultConfig {
    /// RNG seed; the server's seed when absent.
    pub seed: Option<u64>,
    pub requests: Vec<RequestFault>,
    pub watches: Vec<WatchFault>,
    pub compaction: CompactionFault,
}

impl FaultConfig {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }
    pub fn request(mut self, fault: RequestFault) -> Self {
        self.requests.push(fault);
        self
    }
    pub fn watch(mut self, fault: WatchFault) -> Self {
        self.watches.push(fault);
        self
    }
    pub fn compact_every(mut self, interval: Duration) -> Self {
        self.compaction.every_ms = Some(interval.as_millis() as u64);
        self
    }
    pub fn compact_before_watch(mut self, fraction: f64) -> Self {
        self.compaction.before_watch = fraction;
        self
    }

    /// Parses YAML or JSON (JSON is YAML).
    pub fn from_yaml(text: &str, origin: &str) -> Result<Self, FaultsError> {
        let config: FaultConfig =
            serde_yaml::from_str(text).map_err(|source| FaultsError::Parse {
                path: origin.to_string(),
                source,
            })?;
        config.check()?;
        Ok(config)
    }

    pub fn from_file(path: &Path) -> Result<Self, FaultsError> {
        let text = std::fs::read_to_string(path).map_err(|source| FaultsError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_yaml(&text, &path.display().to_string())
    }

    fn check(&self) -> Result<(), FaultsError> {
        let fractions = self
            .requests
            .iter()
            .flat_map(|r| {
                [
                    r.conflict,
                    r.server_error,
                    r.too_many_requests,
                    r.lost_response,
                ]
            })
            .chain(self.watches.iter().map(|w| w.drop_events))
            .chain([self.compaction.before_watch]);
        for f in fractions {
            if !(0.0..=1.0).contains(&f) {
                return Err(FaultsError::Invalid(format!(
                    "fraction {f} is not within 0..=1"
                )));
            }
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self == &FaultConfig {
            seed: self.seed,
            ..Default::default()
        }
    }
}

fn applies(resources: &[String], info: &ResourceInfo) -> bool {
    resources.is_empty()
        || resources
            .iter()
            .any(|r| r == info.plural || *r == info.qualified())
}

/// What the injector decided for one request.
#[derive(Debug, Default)]
pub struct RequestDecision {
    pub latency: Duration,
    pub error: Option<ApiError>,
    /// Apply the request, then drop the connection instead of answering.
    pub lose_response: bool,
}

/// What the injector did so far, by kind (for fault campaigns' reports).
#[derive(Debug, Default)]
struct Injected([AtomicU64; FaultKind::ALL.len()]);

/// The kinds of fault the injector counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    Conflict,
    ServerError,
    TooManyRequests,
    Latency,
    LostResponse,
    DroppedWatchEvent,
    ClosedWatch,
    CompactedBeforeWatch,
}

impl FaultKind {
    pub const ALL: [FaultKind; 8] = [
        FaultKind::Conflict,
        FaultKind::ServerError,
        FaultKind::TooManyRequests,
        FaultKind::Latency,
        FaultKind::LostResponse,
        FaultKind::DroppedWatchEvent,
        FaultKind::ClosedWatch,
        FaultKind::CompactedBeforeWatch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Conflict => "409 conflict",
            FaultKind::ServerError => "500 server error",
            FaultKind::TooManyRequests => "429 too many requests",
            FaultKind::Latency => "added latency",
            FaultKind::LostResponse => "lost response",
            FaultKind::DroppedWatchEvent => "dropped watch event",
            FaultKind::ClosedWatch => "closed watch stream",
            FaultKind::CompactedBeforeWatch => "compaction before watch",
        }
    }
}

/// Watch faults in effect for one stream.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WatchPlan {
    pub drop_events: f64,
    pub delay: Duration,
    pub close_after_events: Option<usize>,
}

pub struct FaultInjector {
    config: FaultConfig,
    rng: Mutex<ChaCha8Rng>,
    injected: Injected,
    /// Cancelled when the faults stop for good.
    stopped: CancellationToken,
}

impl FaultInjector {
    pub fn new(config: FaultConfig, default_seed: u64) -> Self {
        let seed = config.seed.unwrap_or(default_seed);
        FaultInjector {
            config,
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
            injected: Injected::default(),
            stopped: CancellationToken::new(),
        }
    }

    /// Stops injecting faults for good (a fault campaign's "the network heals").
    pub fn stop(&self) {
        self.stopped.cancel();
    }

    /// Resolves once the faults stopped: streams that ran under a fault plan end.
    pub fn stopped(&self) -> &CancellationToken {
        &self.stopped
    }

    fn active(&self) -> bool {
        !self.stopped.is_cancelled()
    }

    /// Counts one injected fault of `kind`.
    pub fn record(&self, kind: FaultKind) {
        self.injected.0[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Faults injected so far, by kind name (kinds never injected included, as 0).
    pub fn injected(&self) -> BTreeMap<&'static str, u64> {
        FaultKind::ALL
            .iter()
            .map(|k| {
                (
                    k.name(),
                    self.injected.0[*k as usize].load(Ordering::Relaxed),
                )
            })
            .collect()
    }

    pub fn config(&self) -> &FaultConfig {
        &self.config
    }

    /// True with probability `fraction` (never draws for 0, so unrelated rules do not shift the
    /// random sequence).
    pub fn chance(&self, fraction: f64) -> bool {
        if fraction <= 0.0 || !self.active() {
            return false;
        }
        let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
        rng.random_bool(fraction.min(1.0))
    }

    pub fn before_request(&self, verb: Verb, info: &ResourceInfo, name: &str) -> RequestDecision {
        let mut decision = RequestDecision::default();
        if !self.active() {
            return decision;
        }
        for rule in &self.config.requests {
            if !(rule.verbs.is_empty() || rule.verbs.contains(&verb))
                || !applies(&rule.resources, info)
            {
                continue;
            }
            decision.latency += Duration::from_millis(rule.latency_ms);
            if rule.latency_ms > 0 {
                self.record(FaultKind::Latency);
            }
            if decision.error.is_some() || decision.lose_response {
                continue;
            }
            if self.chance(rule.conflict) {
                self.record(FaultKind::Conflict);
                decision.error = Some(ApiError::conflict_modified(info, name));
            } else if self.chance(rule.server_error) {
                self.record(FaultKind::ServerError);
                decision.error = Some(ApiError::internal("injected fault"));
            } else if self.chance(rule.too_many_requests) {
                self.record(FaultKind::TooManyRequests);
                decision.error = Some(ApiError::too_many_requests(
                    rule.retry_after_seconds.unwrap_or(1),
                ));
            } else if self.chance(rule.lost_response) {
                decision.lose_response = true;
            }
        }
        decision
    }

    pub fn watch_plan(&self, info: &ResourceInfo) -> WatchPlan {
        let mut plan = WatchPlan::default();
        if !self.active() {
            return plan;
        }
        for rule in self
            .config
            .watches
            .iter()
            .filter(|w| applies(&w.resources, info))
        {
            plan.drop_events = plan.drop_events.max(rule.drop_events);
            plan.delay = plan.delay.max(Duration::from_millis(rule.delay_ms));
            plan.close_after_events = match (plan.close_after_events, rule.close_after_events) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        plan
    }

    pub fn compact_before_watch(&self) -> bool {
        let compact = self.chance(self.config.compaction.before_watch);
        if compact {
            self.record(FaultKind::CompactedBeforeWatch);
        }
        compact
    }

    /// Whether to drop one live watch event under `plan`.
    pub fn drop_event(&self, plan: &WatchPlan) -> bool {
        let drop = self.chance(plan.drop_events);
        if drop {
            self.record(FaultKind::DroppedWatchEvent);
        }
        drop
    }

    pub fn compaction_interval(&self) -> Option<Duration> {
        self.config
            .compaction
            .every_ms
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources;

    #[test]
    fn yaml_config_parses_and_validates() {
        let text = "seed: 3\nrequests:\n  - verbs: [patch]\n    resources: [pods]\n    conflict: 1\nwatches:\n  - delayMs: 5\ncompaction:\n  everyMs: 100\n";
        let config = FaultConfig::from_yaml(text, "inline").unwrap();
        assert_eq!(config.requests[0].verbs, vec![Verb::Patch]);
        assert_eq!(config.compaction.every_ms, Some(100));
        assert!(FaultConfig::from_yaml("requests:\n  - conflict: 2\n", "inline").is_err());
        assert!(FaultConfig::from_yaml("bogus: 1\n", "inline").is_err());
    }

    #[test]
    fn rules_match_verb_and_resource_and_are_seeded() {
        let pods = resources::pods().info();
        let cms = resources::by_plural("", "configmaps").unwrap().info();
        let config = FaultConfig::new().request(
            RequestFault::new()
                .verbs([Verb::Patch])
                .resources(["pods"])
                .conflict(0.5),
        );
        let a = FaultInjector::new(config.clone(), 1);
        let b = FaultInjector::new(config, 1);
        let draws_a: Vec<bool> = (0..50)
            .map(|_| a.before_request(Verb::Patch, pods, "p").error.is_some())
            .collect();
        let draws_b: Vec<bool> = (0..50)
            .map(|_| b.before_request(Verb::Patch, pods, "p").error.is_some())
            .collect();
        assert_eq!(draws_a, draws_b);
        assert!(draws_a.contains(&true) && draws_a.contains(&false));
        assert!(a.before_request(Verb::Get, pods, "p").error.is_none());
        assert!(a.before_request(Verb::Patch, cms, "c").error.is_none());
    }

    #[test]
    fn lost_responses_are_drawn_counted_by_the_caller_and_stop_with_the_faults() {
        let pods = resources::pods().info();
        let config = FaultConfig::new().request(
            RequestFault::new()
                .verbs([Verb::Create])
                .lost_response(1.0)
                .latency(Duration::from_millis(1)),
        );
        let injector = FaultInjector::new(config, 1);
        let decision = injector.before_request(Verb::Create, pods, "p");
        assert!(decision.lose_response && decision.error.is_none());
        assert_eq!(injector.injected()["added latency"], 1);
        injector.record(FaultKind::LostResponse);
        assert_eq!(injector.injected()["lost response"], 1);

        injector.stop();
        let decision = injector.before_request(Verb::Create, pods, "p");
        assert!(!decision.lose_response && decision.latency.is_zero());
        assert!(injector.stopped().is_cancelled());
        assert!(FaultConfig::from_yaml("requests:\n  - lostResponse: 1.5\n", "inline").is_err());
    }
}
