//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's
//! algorithm and timings (15 s lease, 10 s renew deadline, 2 s retry).
//!
//! Every write is a conditional update (the Lease's resourceVersion), so two
//! candidates can never both take the lease: the loser gets 409 and tries again
//! later. A lease counts as expired when its record did not change for the
//! lease duration *as seen by this process's clock* (not the holder's
//! `renewTime`), which makes the election immune to clock skew between nodes.
//!
//! Unlike kube-lease-manager, the leader steps down when it cannot renew within
//! the renew deadline (e.g. cut off from the API server), before its lease can
//! expire for the others: the guarantee "one leader at a time" needs it.

use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::{Api, Client};

/// client-go's `JitterFactor` for the acquire loop.
const JITTER: f64 = 1.2;

#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("leader election settings: {0}")]
    Config(String),
    #[error("lease {namespace}/{name}: {source}")]
    Api {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("lease {namespace}/{name}: no answer from the API server within {timeout:?}")]
    Timeout {
        namespace: String,
        name: String,
        timeout: Duration,
    },
}

/// Which Lease, who we are, and the timings.
#[derive(Debug, Clone)]
pub struct ElectionConfig {
    pub lease_name: String,
    pub lease_namespace: String,
    /// Unique per replica (the pod name plus a random suffix).
    pub identity: String,
    /// How long a non-leader waits after the last observed change before taking over.
    pub lease_duration: Duration,
    /// The leader steps down when it could not renew for this long.
    pub renew_deadline: Duration,
    /// Time between attempts to acquire or renew.
    pub retry_period: Duration,
}

impl ElectionConfig {
    /// client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retry.
    pub fn new(
        lease_name: impl Into<String>,
        lease_namespace: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self {
            lease_name: lease_name.into(),
            lease_namespace: lease_namespace.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// The same ordering rules client-go enforces.
    pub fn validate(&self) -> Result<(), LeaderError> {
        let fail = |m: String| Err(LeaderError::Config(m));
        if self.identity.is_empty() {
            return fail("the identity must not be empty".into());
        }
        if self.lease_duration < Duration::from_secs(1) {
            return fail(format!(
                "lease duration {:?} is below one second",
                self.lease_duration
            ));
        }
        if self.lease_duration <= self.renew_deadline {
            return fail(format!(
                "lease duration {:?} must be greater than the renew deadline {:?}",
                self.lease_duration, self.renew_deadline
            ));
        }
        if self.renew_deadline.as_secs_f64() <= JITTER * self.retry_period.as_secs_f64() {
            return fail(format!(
                "renew deadline {:?} must be greater than {JITTER} × the retry period {:?}",
                self.renew_deadline, self.retry_period
            ));
        }
        Ok(())
    }

    /// Refuses a shutdown grace longer than the renew deadline: nothing renews
    /// the lease while reconciles finish, so writes are fenced off at the renew
    /// deadline after the last renewal whatever the grace says.
    pub fn check_shutdown_grace(&self, grace: Duration) -> Result<(), LeaderError> {
        if grace > self.renew_deadline {
            return Err(LeaderError::Config(format!(
                "--shutdown-grace-seconds {grace:?} is longer than the renew deadline {:?}: \
                 nothing renews the lease during shutdown, so writes stop at the renew \
                 deadline after the last renewal; use a grace of at most {:?}",
                self.renew_deadline, self.renew_deadline
            )));
        }
        Ok(())
    }

    /// `leaseDurationSeconds` as written into the Lease (whole seconds, rounded up).
    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_millis().div_ceil(1000)).unwrap_or(i32::MAX)
    }
}

/// A default identity: `$POD_NAME` (or the host name) plus a random suffix, so a
/// restarted pod with the same name is a new candidate.
pub fn default_identity() -> String {
    let base = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "rekon".to_string());
    format!("{base}_{:08x}", rand::random::<u32>())
}

/// Why a leader stopped leading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeadershipLost {
    /// Another candidate holds the lease now.
    TakenBy(String),
    /// No successful renewal within the renew deadline.
    RenewDeadline(Duration),
}

impl fmt::Display for LeadershipLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TakenBy(holder) => write!(f, "the lease is held by {holder} now"),
            Self::RenewDeadline(deadline) => {
                write!(f, "could not renew the lease within {deadline:?}")
            }
        }
    }
}

/// The last Lease record seen and when this process saw it change.
struct Observed {
    spec: LeaseSpec,
    at: Instant,
}

/// What one acquire-or-renew round found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Round {
    /// We hold the lease (acquired or renewed).
    Holding,
    /// Someone else holds an unexpired lease, or won the race to update it.
    HeldBy(String),
}

pub struct LeaderElector {
    api: Api<Lease>,
    config: ElectionConfig,
    observed: Option<Observed>,
    /// When the last round that took or renewed the lease started.
    renewed_at: Option<Instant>,
}

impl LeaderElector {
    pub fn new(client: Client, config: ElectionConfig) -> Result<Self, LeaderError> {
        config.validate()?;
        Ok(Self {
            api: Api::namespaced(client, &config.lease_namespace),
            config,
            observed: None,
            renewed_at: None,
        })
    }

    pub fn config(&self) -> &ElectionConfig {
        &self.config
    }

    /// Campaigns until this candidate holds the lease. Cancel-safe: drop it to stop.
    pub async fn acquire(&mut self) {
        loop {
            match self.round().await {
                Ok(Round::Holding) => {
                    tracing::info!(lease = %self.config.lease_name, identity = %self.config.identity, "acquired the lease");
                    return;
                }
                Ok(Round::HeldBy(holder)) => {
                    tracing::debug!(lease = %self.config.lease_name, %holder, "lease held by another candidate");
                }
                Err(err) => tracing::warn!(error = %err, "trying to acquire the lease"),
            }
            let jitter = 1.0 + rand::random::<f64>() * (JITTER - 1.0);
            tokio::time::sleep(self.config.retry_period.mul_f64(jitter)).await;
        }
    }

    /// Renews the lease every retry period while leading; returns when the
    /// lease is lost. The caller must stop acting as leader at once.
    ///
    /// The leader stops *at* its renew deadline ([`Self::renew_deadline`]),
    /// measured from the start of the last renewal that succeeded (the time
    /// it wrote as `renewTime`): a failed round is retried every retry period
    /// but never past the deadline, and a round still in flight at the
    /// deadline is abandoned.
    pub async fn hold(&mut self) -> LeadershipLost {
        let deadline = self.config.renew_deadline;
        loop {
            let Some(stop_at) = self.renew_deadline() else {
                return LeadershipLost::RenewDeadline(deadline);
            };
            let next = (Instant::now() + self.config.retry_period).min(stop_at);
            tokio::time::sleep_until(next).await;
            if Instant::now() >= stop_at {
                return LeadershipLost::RenewDeadline(deadline);
            }
            match tokio::time::timeout_at(stop_at, self.round()).await {
                Ok(Ok(Round::Holding)) => {}
                Ok(Ok(Round::HeldBy(holder))) => return LeadershipLost::TakenBy(holder),
                Ok(Err(err)) => tracing::warn!(error = %err, "renewing the lease"),
                Err(_) => return LeadershipLost::RenewDeadline(deadline),
            }
        }
    }

    /// When this leader must have stopped writing: the renew deadline after
    /// the start of its last successful acquire or renewal. `None` before the
    /// first one. Nothing renews the lease during a graceful shutdown, so the
    /// write fence must close by then too.
    pub fn renew_deadline(&self) -> Option<Instant> {
        self.renewed_at.map(|at| at + self.config.renew_deadline)
    }

    /// Gives the lease up if this candidate holds it, so a standby takes over
    /// after its next retry instead of waiting for the lease to expire.
    pub async fn release(&mut self) -> Result<(), LeaderError> {
        let Some(mut lease) = self.get().await? else {
            return Ok(());
        };
        let spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(());
        }
        let now = MicroTime(Timestamp::now());
        lease.spec = Some(LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            ..spec
        });
        match self
            .api
            .replace(&self.config.lease_name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => {
                tracing::info!(lease = %self.config.lease_name, "released the lease");
                Ok(())
            }
            // Somebody changed the lease since: it is not ours to release any more.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            Err(source) => Err(self.api_error(source)),
        }
    }

    /// One client-go `tryAcquireOrRenew`.
    async fn round(&mut self) -> Result<Round, LeaderError> {
        let started = Instant::now();
        let round = self.try_round().await;
        if let Ok(Round::Holding) = round {
            self.renewed_at = Some(started);
        }
        round
    }

    async fn try_round(&mut self) -> Result<Round, LeaderError> {
        let now = MicroTime(Timestamp::now());
        let Some(mut lease) = self.get().await? else {
            return self.create(now).await;
        };
        let current = lease.spec.clone().unwrap_or_default();
        self.observe(&current);
        let holder = current.holder_identity.clone().filter(|h| !h.is_empty());
        let mine = holder.as_deref() == Some(self.config.identity.as_str());
        if let Some(holder) = holder.as_ref().filter(|_| !mine)
            && !self.observed_expired(&current)
        {
            return Ok(Round::HeldBy(holder.clone()));
        }
        let transitions = current.lease_transitions.unwrap_or(0);
        let spec = LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(self.config.lease_seconds()),
            acquire_time: if mine {
                current.acquire_time.clone()
            } else {
                Some(now.clone())
            },
            renew_time: Some(now),
            lease_transitions: Some(if mine { transitions } else { transitions + 1 }),
            ..current
        };
        lease.spec = Some(spec.clone());
        // `lease` carries the resourceVersion we read: a concurrent writer makes this 409.
        match self
            .api
            .replace(&self.config.lease_name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => {
                self.observe(&spec);
                Ok(Round::Holding)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Round::HeldBy(
                holder.unwrap_or_else(|| "a faster candidate".into()),
            )),
            Err(source) => Err(self.api_error(source)),
        }
    }

    async fn create(&mut self, now: MicroTime) -> Result<Round, LeaderError> {
        let spec = LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(self.config.lease_seconds()),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        };
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.config.lease_name.clone()),
                namespace: Some(self.config.lease_namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(spec.clone()),
        };
        match self.api.create(&PostParams::default(), &lease).await {
            Ok(_) => {
                self.observe(&spec);
                Ok(Round::Holding)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                Ok(Round::HeldBy("a faster candidate".into()))
            }
            Err(source) => Err(self.api_error(source)),
        }
    }

    async fn get(&self) -> Result<Option<Lease>, LeaderError> {
        self.api
            .get_opt(&self.config.lease_name)
            .await
            .map_err(|source| self.api_error(source))
    }

    /// Remembers when the record last changed, by this process's clock.
    fn observe(&mut self, spec: &LeaseSpec) {
        if self.observed.as_ref().is_none_or(|o| o.spec != *spec) {
            self.observed = Some(Observed {
                spec: spec.clone(),
                at: Instant::now(),
            });
        }
    }

    /// The holder did not renew for the record's lease duration since we saw it change.
    fn observed_expired(&self, spec: &LeaseSpec) -> bool {
        let seconds = spec.lease_duration_seconds.unwrap_or(0).max(0);
        let duration = Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
        self.observed
            .as_ref()
            .is_none_or(|o| o.at.elapsed() >= duration)
    }

    fn api_error(&self, source: kube::Error) -> LeaderError {
        LeaderError::Api {
            namespace: self.config.lease_namespace.clone(),
            name: self.config.lease_name.clone(),
            source,
        }
    }
}
