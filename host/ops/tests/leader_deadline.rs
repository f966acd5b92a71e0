//! The elector's renew deadline under tokio's paused clock, against an
//! in-process Lease endpoint whose answers (and their delays) the test scripts:
//! the leader stops at the deadline measured from the start of its last
//! successful renewal, never a retry period later.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use rekon_ops::leader::{ElectionConfig, LeaderElector, LeadershipLost};
use serde_json::{Value, json};
use tokio::time::Instant;

/// How the endpoint answers one lease update (PUT).
#[derive(Clone, Copy)]
struct Answer {
    after: Duration,
    ok: bool,
}

/// One Lease, created on POST, replaced on PUT (conditional on its
/// resourceVersion); PUTs answer as scripted, then fail at once.
#[derive(Clone, Default)]
struct LeaseEndpoint {
    lease: Arc<Mutex<Option<Value>>>,
    updates: Arc<Mutex<VecDeque<Answer>>>,
}

fn status(code: StatusCode) -> Response<Body> {
    let reason = match code {
        StatusCode::NOT_FOUND => "NotFound",
        _ => "InternalError",
    };
    let body = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                      "code": code.as_u16(), "reason": reason, "message": "scripted"});
    Response::builder()
        .status(code)
        .body(body.to_string().into_bytes().into())
        .unwrap()
}

fn ok(value: &Value) -> Response<Body> {
    Response::new(value.to_string().into_bytes().into())
}

impl tower::Service<Request<Body>> for LeaseEndpoint {
    type Response = Response<Body>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<'static, Result<Response<Body>, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let method = request.method().clone();
            let body = request.into_body().collect_bytes().await.unwrap();
            let stored = this.lease.lock().unwrap().clone();
            Ok(match (method, stored) {
                (Method::GET, Some(lease)) => ok(&lease),
                (Method::GET, None) => status(StatusCode::NOT_FOUND),
                (Method::POST, _) => {
                    let mut lease: Value = serde_json::from_slice(&body).unwrap();
                    lease["metadata"]["resourceVersion"] = json!("1");
                    *this.lease.lock().unwrap() = Some(lease.clone());
                    ok(&lease)
                }
                (Method::PUT, Some(old)) => {
                    let answer = this.updates.lock().unwrap().pop_front().unwrap_or(Answer {
                        after: Duration::ZERO,
                        ok: false,
                    });
                    tokio::time::sleep(answer.after).await;
                    if !answer.ok {
                        return Ok(status(StatusCode::INTERNAL_SERVER_ERROR));
                    }
                    let mut lease: Value = serde_json::from_slice(&body).unwrap();
                    let version: u64 = old["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap()
                        .parse()
                        .unwrap();
                    lease["metadata"]["resourceVersion"] = json!((version + 1).to_string());
                    *this.lease.lock().unwrap() = Some(lease.clone());
                    ok(&lease)
                }
                _ => status(StatusCode::METHOD_NOT_ALLOWED),
            })
        })
    }
}

/// client-go's timings: lease 15 s, renew deadline 10 s, retry 2 s.
async fn leader(updates: &[Answer]) -> (LeaderElector, Instant) {
    let endpoint = LeaseEndpoint::default();
    endpoint
        .updates
        .lock()
        .unwrap()
        .extend(updates.iter().copied());
    let client = Client::new(endpoint, "default");
    let mut elector =
        LeaderElector::new(client, ElectionConfig::new("lease", "default", "a")).unwrap();
    let started = Instant::now();
    elector.acquire().await;
    (elector, started)
}

/// `hold`, failing the test if the leader still leads after a minute.
async fn hold(elector: &mut LeaderElector) -> LeadershipLost {
    tokio::time::timeout(Duration::from_secs(60), elector.hold())
        .await
        .expect("the leader stops within a minute")
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_cannot_renew_stops_at_its_renew_deadline() {
    // Acquired at t=0; every renewal fails at once from then on.
    let (mut elector, started) = leader(&[]).await;
    let lost = hold(&mut elector).await;
    assert_eq!(lost, LeadershipLost::RenewDeadline(Duration::from_secs(10)));
    assert_eq!(
        started.elapsed().as_millis(),
        10_000,
        "stopped after {:?}, not at the renew deadline",
        started.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn the_renew_deadline_runs_from_the_start_of_the_last_successful_renewal() {
    // The renewal that starts at t=2 succeeds only at t=3.5; all later ones
    // fail. The record it wrote says t=2, so the standby may take over from
    // t=2 + 15 s: the leader stops at t=2 + 10 s.
    let (mut elector, started) = leader(&[Answer {
        after: Duration::from_millis(1500),
        ok: true,
    }])
    .await;
    let lost = hold(&mut elector).await;
    assert_eq!(lost, LeadershipLost::RenewDeadline(Duration::from_secs(10)));
    assert_eq!(
        started.elapsed().as_millis(),
        12_000,
        "stopped after {:?}",
        started.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn at_shutdown_writes_get_at_most_the_time_left_until_the_renew_deadline() {
    let (elector, _) = leader(&[]).await;
    let supervision = rekon_ops::Supervision {
        metrics: Arc::new(rekon_ops::Metrics::new()),
        health: Arc::new(rekon_ops::Health::new()),
        shutdown_grace: Duration::from_secs(8),
    };
    // Nothing renews from here on (the renewal loop ends with the shutdown).
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(supervision.leader_grace(&elector), Duration::from_secs(8));
    tokio::time::advance(Duration::from_secs(6)).await;
    assert_eq!(supervision.leader_grace(&elector), Duration::from_secs(3));
    tokio::time::advance(Duration::from_secs(5)).await;
    assert_eq!(supervision.leader_grace(&elector), Duration::ZERO);
}

#[test]
fn a_shutdown_grace_longer_than_the_renew_deadline_is_refused() {
    let config = ElectionConfig::new("lease", "default", "a");
    assert!(config.check_shutdown_grace(Duration::from_secs(10)).is_ok());
    let err = config
        .check_shutdown_grace(Duration::from_secs(30))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--shutdown-grace-seconds") && err.contains("renew deadline 10s"),
        "{err}"
    );
}
