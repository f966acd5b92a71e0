//! The elector against the embedded API server: one holder at a time, takeover
//! after release or expiry, stepping down when the lease is taken or cannot be
//! renewed. Short timings (lease 3 s, renew 2 s, retry 0.5 s).

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::PostParams;
use rekon_ops::leader::{ElectionConfig, LeaderElector, LeadershipLost};
use rekon_simulate::{ClusterOptions, EmbeddedCluster};

const LEASE: &str = "rekon-test";
const NAMESPACE: &str = "default";

fn config(identity: &str) -> ElectionConfig {
    ElectionConfig {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(500),
        ..ElectionConfig::new(LEASE, NAMESPACE, identity)
    }
}

fn elector(cluster: &EmbeddedCluster, identity: &str) -> LeaderElector {
    LeaderElector::new(cluster.client.clone(), config(identity)).expect("valid election settings")
}

async fn lease(cluster: &EmbeddedCluster) -> Lease {
    Api::<Lease>::namespaced(cluster.client.clone(), NAMESPACE)
        .get(LEASE)
        .await
        .expect("the lease exists")
}

fn holder(lease: &Lease) -> Option<String> {
    lease.spec.as_ref().and_then(|s| s.holder_identity.clone())
}

async fn acquire_within(elector: &mut LeaderElector, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    tokio::time::timeout(limit, elector.acquire())
        .await
        .ok()
        .map(|()| started.elapsed())
}

#[tokio::test(flavor = "multi_thread")]
async fn only_one_candidate_holds_the_lease_while_it_is_renewed() {
    let cluster = EmbeddedCluster::start(&ClusterOptions::default())
        .await
        .unwrap();
    let mut a = elector(&cluster, "a");
    let mut b = elector(&cluster, "b");
    acquire_within(&mut a, Duration::from_secs(2))
        .await
        .expect("the first candidate creates and takes the lease");
    let created = lease(&cluster).await;
    assert_eq!(holder(&created).as_deref(), Some("a"));
    assert_eq!(
        created.spec.as_ref().unwrap().lease_duration_seconds,
        Some(3)
    );
    assert_eq!(created.spec.as_ref().unwrap().lease_transitions, Some(0));

    let holding = tokio::spawn(async move { a.hold().await });
    // Twice the lease duration: a renewed lease never expires for the standby.
    assert_eq!(
        acquire_within(&mut b, Duration::from_secs(6)).await,
        None,
        "b took a renewed lease"
    );
    assert!(
        !holding.is_finished(),
        "a stopped leading: {:?}",
        holding.await
    );
    let renewed = lease(&cluster).await;
    assert_eq!(holder(&renewed).as_deref(), Some("a"));
    assert_ne!(
        renewed.spec.as_ref().unwrap().renew_time,
        created.spec.as_ref().unwrap().renew_time,
        "a renewed"
    );
    holding.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_released_lease_is_taken_at_the_next_retry() {
    let cluster = EmbeddedCluster::start(&ClusterOptions::default())
        .await
        .unwrap();
    let mut a = elector(&cluster, "a");
    let mut b = elector(&cluster, "b");
    a.acquire().await;
    // b sees a's fresh record first, so only the release can let it in early.
    assert_eq!(
        acquire_within(&mut b, Duration::from_millis(700)).await,
        None
    );
    a.release().await.expect("release");
    let released = lease(&cluster).await;
    assert_eq!(holder(&released), None);

    let took = acquire_within(&mut b, Duration::from_secs(2))
        .await
        .expect("b takes the released lease");
    assert!(
        took < Duration::from_secs(1),
        "took {took:?}, more than two retry periods"
    );
    let taken = lease(&cluster).await;
    assert_eq!(holder(&taken).as_deref(), Some("b"));
    assert_eq!(taken.spec.as_ref().unwrap().lease_transitions, Some(1));
    // Releasing a lease someone else holds changes nothing.
    a.release().await.expect("release by a non-holder");
    assert_eq!(holder(&lease(&cluster).await).as_deref(), Some("b"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lease_nobody_renews_is_taken_after_the_lease_duration() {
    let cluster = EmbeddedCluster::start(&ClusterOptions::default())
        .await
        .unwrap();
    let mut a = elector(&cluster, "a");
    let mut b = elector(&cluster, "b");
    a.acquire().await;
    // a "crashes": it never renews.
    let took = acquire_within(&mut b, Duration::from_secs(10))
        .await
        .expect("b takes the expired lease");
    let lease_duration = Duration::from_secs(3);
    assert!(took >= lease_duration, "b took a live lease after {took:?}");
    assert!(
        took <= lease_duration + Duration::from_millis(1500),
        "takeover took {took:?}"
    );
    assert_eq!(holder(&lease(&cluster).await).as_deref(), Some("b"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_leader_whose_lease_was_taken_steps_down_at_its_next_renewal() {
    let cluster = EmbeddedCluster::start(&ClusterOptions::default())
        .await
        .unwrap();
    let mut a = elector(&cluster, "a");
    a.acquire().await;
    let holding = tokio::spawn(async move { a.hold().await });

    let api = Api::<Lease>::namespaced(cluster.client.clone(), NAMESPACE);
    let mut stolen = api.get(LEASE).await.unwrap();
    stolen.spec.as_mut().unwrap().holder_identity = Some("intruder".into());
    api.replace(LEASE, &PostParams::default(), &stolen)
        .await
        .unwrap();
    let stolen_at = Instant::now();

    let lost = tokio::time::timeout(Duration::from_secs(3), holding)
        .await
        .expect("a noticed within the renew deadline")
        .unwrap();
    assert_eq!(lost, LeadershipLost::TakenBy("intruder".into()));
    assert!(
        stolen_at.elapsed() < Duration::from_secs(1),
        "a stepped down after {:?}",
        stolen_at.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_leader_cut_off_from_the_api_server_steps_down_within_the_renew_deadline() {
    let cluster = EmbeddedCluster::start(&ClusterOptions::default())
        .await
        .unwrap();
    let mut a = elector(&cluster, "a");
    a.acquire().await;
    let holding = tokio::spawn(async move { a.hold().await });
    cluster.server.shutdown().await;
    let cut_at = Instant::now();

    let lost = tokio::time::timeout(Duration::from_secs(5), holding)
        .await
        .expect("a steps down")
        .unwrap();
    assert_eq!(lost, LeadershipLost::RenewDeadline(Duration::from_secs(2)));
    // Before the lease (3 s) can expire for a standby: never two leaders.
    assert!(
        cut_at.elapsed() < Duration::from_secs(3),
        "stepped down after {:?}",
        cut_at.elapsed()
    );
}
