//! Leader election with two hosts on one embedded API server: only the leader
//! reconciles; a crashed leader is replaced within the lease duration, a
//! leader stopped with SIGTERM hands over at once, a leader whose lease is taken
//! stops reconciling at once; the new leader converges the remaining work.
//! Short timings: lease 3 s, renew deadline 2 s, retry 0.5 s.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use rekon_controllers::host::{Host, HostConfig};
use rekon_controllers::journal::Journal;
use rekon_ops::{ElectionConfig, Health, LeaderElector, Metrics, Supervision};
use rekon_simulate::{ClusterOptions, Deciders, EmbeddedCluster, host_config};
use rekon_tests::sim::*;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const LEASE: &str = "rekon-controllers";
const LEASE_DURATION: Duration = Duration::from_secs(3);
const RETRY: Duration = Duration::from_millis(500);

fn election(identity: &str) -> ElectionConfig {
    ElectionConfig {
        lease_duration: LEASE_DURATION,
        renew_deadline: Duration::from_secs(2),
        retry_period: RETRY,
        ..ElectionConfig::new(LEASE, "default", identity)
    }
}

/// One rekon replica: its own metrics, health, journal and supervisor task.
struct Replica {
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    journal: Arc<Journal>,
    task: JoinHandle<()>,
    stop: Option<oneshot::Sender<()>>,
}

impl Replica {
    fn spawn(cluster: &EmbeddedCluster, identity: &str) -> Self {
        let metrics = Arc::new(Metrics::new());
        let health = Arc::new(Health::new());
        health.set_guests_loaded(true);
        let journal = Arc::new(Journal::new());
        let deciders: Deciders = wasm_deciders();
        let elector = LeaderElector::new(cluster.client.clone(), election(identity)).unwrap();
        let supervision = Supervision {
            metrics: metrics.clone(),
            health: health.clone(),
            shutdown_grace: Duration::from_secs(5),
        };
        let (client, observer, host_journal) =
            (cluster.client.clone(), metrics.clone(), journal.clone());
        let start = move || {
            Host::start(
                client.clone(),
                HostConfig {
                    observer: observer.clone(),
                    ..host_config(&deciders, host_journal.clone())
                },
            )
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            supervision
                .run_elected(elector, start, async { stopped.await.unwrap_or(()) })
                .await;
        });
        Self {
            metrics,
            health,
            journal,
            task,
            stop: Some(stop),
        }
    }

    fn role(&self) -> &'static str {
        self.health.role_name()
    }

    fn writes(&self) -> usize {
        self.journal.writes().len()
    }

    fn leader_gauge(&self) -> String {
        let text = self.metrics.encode();
        let series = format!(r#"leader_election_master_status{{name="{LEASE}"}} "#);
        text.lines()
            .find_map(|l| l.strip_prefix(&series).map(str::to_string))
            .unwrap_or_else(|| panic!("no leader gauge in:\n{text}"))
    }
}

/// Protected PVCs, created and then deleted through the API: work for pvc-protection.
async fn delete_protected_pvcs(cluster: &EmbeddedCluster, prefix: &str, count: usize) {
    let api: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client.clone(), "ns");
    for i in 0..count {
        let name = format!("{prefix}-{i}");
        let mut object = pvc("ns", &name);
        object["metadata"].as_object_mut().unwrap().remove("uid");
        api.create(
            &PostParams::default(),
            &serde_json::from_value(object).unwrap(),
        )
        .await
        .unwrap();
        api.delete(&name, &DeleteParams::default()).await.unwrap();
    }
}

async fn cluster_with_old_work() -> EmbeddedCluster {
    let cluster = EmbeddedCluster::start(&ClusterOptions::default())
        .await
        .unwrap();
    let mut state = vec![namespace("ns")];
    state.extend((0..10).map(|i| deleting_pvc("ns", &format!("old-{i}"))));
    cluster.server.store().load_objects(state).unwrap();
    cluster
}

/// `a` leads and converged the old work; `b` stands by and has done nothing.
async fn leader_and_standby(cluster: &EmbeddedCluster) -> (Replica, Replica) {
    let a = Replica::spawn(cluster, "a");
    wait_until("a leads", Duration::from_secs(5), || a.role() == "leader").await;
    let b = Replica::spawn(cluster, "b");
    wait_until("a converged the old work", Duration::from_secs(30), || {
        pvcs_left(cluster) == 0
    })
    .await;
    wait_until("b stands by", Duration::from_secs(5), || {
        b.role() == "standby"
    })
    .await;
    assert_eq!(b.writes(), 0, "the standby wrote");
    assert_eq!(
        (a.leader_gauge().as_str(), b.leader_gauge().as_str()),
        ("1", "0")
    );
    assert!(a.writes() >= 10);
    (a, b)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_standby_replaces_a_crashed_leader_within_the_lease_duration_and_converges() {
    let cluster = cluster_with_old_work().await;
    let (mut a, b) = leader_and_standby(&cluster).await;

    // Crash: the supervisor is dropped, the lease is not released.
    a.task.abort();
    let _ = (&mut a.task).await;
    let crashed = Instant::now();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let a_writes = a.writes();
    delete_protected_pvcs(&cluster, "new", 10).await;

    wait_until("b takes over", LEASE_DURATION * 3, || b.role() == "leader").await;
    let takeover = crashed.elapsed();
    println!("takeover after a crash: {takeover:?}");
    // b takes the lease once it saw no renewal for the lease duration: at most
    // one retry (with jitter) after it expired, counted from a's last renewal.
    assert!(
        takeover >= LEASE_DURATION - RETRY.mul_f64(1.2),
        "b took a live lease after {takeover:?}"
    );
    assert!(
        takeover <= LEASE_DURATION + RETRY * 3,
        "takeover took {takeover:?}"
    );
    wait_until("b converged the new work", Duration::from_secs(30), || {
        pvcs_left(&cluster) == 0
    })
    .await;
    assert_eq!(a.writes(), a_writes, "the crashed leader kept writing");
    assert!(b.writes() >= 10, "b released the new PVCs");
    assert_eq!(b.leader_gauge(), "1");
    let lease = Api::<Lease>::namespaced(cluster.client.clone(), "default")
        .get(LEASE)
        .await
        .unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_transitions, Some(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_leader_stopped_by_sigterm_releases_the_lease_and_the_standby_takes_over_at_once() {
    let cluster = cluster_with_old_work().await;
    let (mut a, b) = leader_and_standby(&cluster).await;

    let stopping = Instant::now();
    a.stop.take().unwrap().send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(6), &mut a.task)
        .await
        .expect("a stops within its grace")
        .unwrap();
    assert_eq!(a.role(), "stopping");
    assert_eq!(a.leader_gauge(), "0");
    let a_writes = a.writes();

    wait_until("b takes over", LEASE_DURATION, || b.role() == "leader").await;
    let takeover = stopping.elapsed();
    println!("takeover after a graceful stop: {takeover:?}");
    assert!(
        takeover < RETRY * 3,
        "a released lease is taken at the next retry, took {takeover:?}"
    );
    delete_protected_pvcs(&cluster, "new", 5).await;
    wait_until("b converged the new work", Duration::from_secs(30), || {
        pvcs_left(&cluster) == 0
    })
    .await;
    assert_eq!(a.writes(), a_writes);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_leader_whose_lease_is_taken_stops_reconciling_at_once_and_leads_again_later() {
    let cluster = cluster_with_old_work().await;
    let a = Replica::spawn(&cluster, "a");
    wait_until("a leads", Duration::from_secs(5), || a.role() == "leader").await;
    wait_until("a converged the old work", Duration::from_secs(30), || {
        pvcs_left(&cluster) == 0
    })
    .await;

    let api = Api::<Lease>::namespaced(cluster.client.clone(), "default");
    let mut lease = api.get(LEASE).await.unwrap();
    lease.spec.as_mut().unwrap().holder_identity = Some("intruder".into());
    api.replace(LEASE, &PostParams::default(), &lease)
        .await
        .unwrap();
    let stolen = Instant::now();
    wait_until("a steps down", RETRY * 3, || a.role() == "standby").await;
    println!(
        "stepped down {:?} after the lease was taken",
        stolen.elapsed()
    );
    assert_eq!(a.leader_gauge(), "0");

    let a_writes = a.writes();
    delete_protected_pvcs(&cluster, "new", 3).await;
    // While the intruder's lease is valid nobody reconciles: the work waits.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(a.writes(), a_writes, "a reconciled without the lease");
    assert_eq!(pvcs_left(&cluster), 3);

    // The intruder never renews: a takes the lease back and converges.
    wait_until("a leads again", LEASE_DURATION * 2, || a.role() == "leader").await;
    wait_until("a converged the new work", Duration::from_secs(30), || {
        pvcs_left(&cluster) == 0
    })
    .await;
}
