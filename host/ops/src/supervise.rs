//! Runs the controllers for as long as this replica may: always (no election),
//! or for each term it holds the lease. Stops them on shutdown, within a grace.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rekon_controllers::host::Host;

use crate::health::Health;
use crate::leader::LeaderElector;
use crate::metrics::Metrics;

/// Where the supervisor reports, and how long shutdown may take.
#[derive(Clone)]
pub struct Supervision {
    pub metrics: Arc<Metrics>,
    pub health: Arc<Health>,
    /// Reconciles in flight at shutdown get this long to finish.
    pub shutdown_grace: Duration,
}

/// A running host that is stopped even if the supervising future is dropped
/// (cancelled): nothing renews the lease then, so its writes are fenced and its
/// reconciles cancelled at once.
struct Running(Option<Host>);

impl Running {
    fn revoke(&self) {
        if let Some(host) = &self.0 {
            host.revoke();
        }
    }

    async fn shutdown(mut self, grace: Duration) {
        if let Some(host) = self.0.take() {
            host.shutdown(grace).await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(host) = self.0.take() {
            host.revoke();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(host.shutdown(Duration::ZERO));
            }
        }
    }
}

impl Supervision {
    fn start(&self, start: &impl Fn() -> Host) -> Running {
        let host = start();
        self.metrics.watch_host(host.probe());
        self.health.set_leading(host.probe());
        Running(Some(host))
    }

    async fn stop(&self, host: Running, grace: Duration) {
        self.health.set_stopping();
        tracing::info!(?grace, "shutting down: finishing reconciles in flight");
        host.shutdown(grace).await;
    }

    /// The grace a leader gets at shutdown: the configured one, cut to what
    /// is left until its renew deadline. Nothing renews the lease while
    /// reconciles finish, and the host revokes its write fence when the grace
    /// runs out, so no write leaves after the lease may have expired for a
    /// standby.
    pub fn leader_grace(&self, elector: &LeaderElector) -> Duration {
        let left = elector.renew_deadline().map_or(Duration::ZERO, |deadline| {
            deadline.saturating_duration_since(tokio::time::Instant::now())
        });
        if left < self.shutdown_grace {
            tracing::info!(grace = ?self.shutdown_grace, ?left,
                "shutdown grace cut to the time left until the lease's renew deadline");
        }
        self.shutdown_grace.min(left)
    }

    /// Runs the controllers until `shutdown` resolves (single replica, or
    /// leader election disabled).
    pub async fn run(&self, start: impl Fn() -> Host, shutdown: impl Future<Output = ()>) {
        let host = self.start(&start);
        shutdown.await;
        self.stop(host, self.shutdown_grace).await;
    }

    /// Campaigns for the lease; while it holds the lease, runs the controllers
    /// from `start` (a fresh host per term). Losing the lease revokes the host's
    /// fence at once (no write leaves after the loss is known; reconciles in
    /// flight are cancelled, not detached) and the replica campaigns again as a
    /// standby. On `shutdown` the controllers stop within the grace, cut to
    /// the renew deadline ([`Self::leader_grace`]), and the lease is released.
    pub async fn run_elected(
        &self,
        mut elector: LeaderElector,
        start: impl Fn() -> Host,
        shutdown: impl Future<Output = ()>,
    ) {
        let lease = elector.config().lease_name.clone();
        tokio::pin!(shutdown);
        loop {
            self.metrics.set_leader(&lease, false);
            self.health.set_standby();
            tokio::select! {
                _ = &mut shutdown => {
                    self.health.set_stopping();
                    return;
                }
                _ = elector.acquire() => {}
            }
            self.metrics.set_leader(&lease, true);
            let host = self.start(&start);
            tracing::info!(%lease, "leading: controllers started");
            tokio::select! {
                lost = elector.hold() => {
                    host.revoke();
                    self.metrics.set_leader(&lease, false);
                    self.health.set_standby();
                    tracing::error!(%lease, reason = %lost, "lost the lease: controllers stopped");
                    host.shutdown(Duration::ZERO).await;
                }
                _ = &mut shutdown => {
                    let grace = self.leader_grace(&elector);
                    self.stop(host, grace).await;
                    if let Err(err) = elector.release().await {
                        tracing::warn!(error = %err, "could not release the lease; the standby takes over when it expires");
                    }
                    self.metrics.set_leader(&lease, false);
                    return;
                }
            }
        }
    }
}
