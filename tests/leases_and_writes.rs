//! Leases and writes (issue 13): what a replica may still send after it lost
//! the lease, and what a claim create with an unknown outcome may lead to.
//!
//! - on losing the lease, reconciles in flight are cancelled, not detached: no
//!   write lands after the loss;
//! - a claim create whose response is lost never leads to a second claim for
//!   the same pod claim;
//! - a pod whose created claim is never observed (created and deleted while the
//!   claim watch was down) converges instead of waiting for it forever.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::resource::v1::ResourceClaim;
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use rekon_apiserver::{FaultConfig, RequestFault, Verb, WatchFault};
use rekon_controllers::host::Host;
use rekon_controllers::journal::{Entry, Journal};
use rekon_ops::{ElectionConfig, Health, LeaderElector, Metrics, Supervision};
use rekon_simulate::{ClusterOptions, EmbeddedCluster, host_config};
use rekon_tests::sim::*;
use serde_json::Value;

const LEASE: &str = "rekon-controllers";
const CLAIMS: [&str; 2] = ["resourceclaims", "resourceclaims.resource.k8s.io"];

async fn cluster(faults: FaultConfig, state: Vec<Value>) -> EmbeddedCluster {
    let cluster = EmbeddedCluster::start(&ClusterOptions {
        faults: Some(faults),
        ..ClusterOptions::default()
    })
    .await
    .unwrap();
    cluster.server.store().load_objects(state).unwrap();
    cluster
}

fn injected(cluster: &EmbeddedCluster, kind: &str) -> u64 {
    cluster.server.faults_injected()[kind]
}

fn pvc_writes(journal: &Journal) -> Vec<(String, u16)> {
    journal
        .writes()
        .into_iter()
        .filter_map(|e| match e {
            Entry::Write {
                verb,
                resource,
                code,
                ..
            } if resource == "persistentvolumeclaims" => Some((verb, code)),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_in_flight_when_the_lease_is_lost_is_cancelled_not_sent_later() {
    // Every PVC patch takes 3 s in the server before it is applied.
    let faults = FaultConfig::new().request(
        RequestFault::new()
            .verbs([Verb::Patch])
            .resources(["persistentvolumeclaims"])
            .latency(Duration::from_secs(3)),
    );
    let cluster = cluster(faults, vec![namespace("ns"), deleting_pvc("ns", "data")]).await;

    let journal = Arc::new(Journal::new());
    let health = Arc::new(Health::new());
    health.set_guests_loaded(true);
    let supervision = Supervision {
        metrics: Arc::new(Metrics::new()),
        health: health.clone(),
        shutdown_grace: Duration::from_secs(5),
    };
    let election = ElectionConfig {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(300),
        ..ElectionConfig::new(LEASE, "default", "a")
    };
    let elector = LeaderElector::new(cluster.client.clone(), election).unwrap();
    let deciders = wasm_deciders();
    let (client, host_journal) = (cluster.client.clone(), journal.clone());
    let start = move || Host::start(client.clone(), host_config(&deciders, host_journal.clone()));
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let replica = tokio::spawn(async move {
        supervision
            .run_elected(elector, start, async { stopped.await.unwrap_or(()) })
            .await;
    });

    // The finalizer-removing patch reached the server and sleeps there.
    wait_until(
        "the slow patch is in flight",
        Duration::from_secs(20),
        || injected(&cluster, "added latency") >= 1,
    )
    .await;
    // Meanwhile another replica takes the lease, for a long term.
    let leases = Api::<Lease>::namespaced(cluster.client.clone(), "default");
    let mut lease = leases.get(LEASE).await.unwrap();
    let spec = lease.spec.as_mut().unwrap();
    spec.holder_identity = Some("intruder".into());
    spec.lease_duration_seconds = Some(600);
    leases
        .replace(LEASE, &PostParams::default(), &lease)
        .await
        .unwrap();
    let taken = Instant::now();
    wait_until("a steps down", Duration::from_secs(3), || {
        health.role_name() == "standby"
    })
    .await;
    println!(
        "stepped down {:?} after the lease was taken",
        taken.elapsed()
    );

    // Well past the patch's 3 s: had it been left running, it would have landed.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let objects = cluster.objects();
    let pvc = find(&objects, "PersistentVolumeClaim", "ns", "data");
    assert!(
        pvc.is_some_and(|p| finalizers(p) == [PVC_FINALIZER]),
        "the patch sent before the loss was applied after it: {pvc:?}"
    );
    let writes = pvc_writes(&journal);
    assert!(
        writes.iter().all(|(_, code)| *code != 200),
        "a PVC write succeeded after the lease was lost: {writes:?}"
    );
    replica.abort();
    cluster.server.shutdown().await;
}

/// Claims controlled by the pod `uid-pod-web` for pod claim `gpu`.
async fn claims_of_web(cluster: &EmbeddedCluster) -> Vec<String> {
    let api: Api<ResourceClaim> = Api::namespaced(cluster.client.clone(), "ns");
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| {
            c.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.get(POD_CLAIM_NAME).map(String::as_str) == Some("gpu"))
        })
        .filter_map(|c| c.metadata.name)
        .collect()
}

/// The live reads of resourceclaims the host journaled, by verb.
fn claim_reads(journal: &Journal, verb: &str) -> usize {
    journal
        .entries()
        .iter()
        .filter(|e| {
            matches!(e, Entry::Write { verb: v, resource, .. }
                if v == verb && resource == "resourceclaims")
        })
        .count()
}

fn claim_status(objects: &[Value]) -> Option<String> {
    let pod = find(objects, "Pod", "ns", "web")?;
    pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        .as_str()
        .map(str::to_string)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_create_whose_response_is_lost_leads_to_one_claim_only() {
    // Every claim create is applied but its answer is lost; claim events reach
    // the informer 1 s late, so the retry decides before it shows the claim.
    let faults = FaultConfig::new()
        .request(
            RequestFault::new()
                .verbs([Verb::Create])
                .resources(CLAIMS)
                .lost_response(1.0),
        )
        .watch(
            WatchFault::new()
                .resources(CLAIMS)
                .delay(Duration::from_secs(1)),
        );
    let web = pod_with_template_claims("ns", "web", "", &[("gpu", "gpu")]);
    let cluster = cluster(faults, vec![namespace("ns"), template("ns", "gpu"), web]).await;
    let journal = Arc::new(Journal::new());
    let host = Host::start(
        cluster.client.clone(),
        host_config(&wasm_deciders(), journal.clone()),
    );
    let converged = host
        .wait_idle(
            Duration::from_millis(1500),
            Duration::from_secs(2),
            Duration::from_secs(30),
        )
        .await;
    host.shutdown(Duration::from_secs(5)).await;
    assert!(injected(&cluster, "lost response") >= 1);
    let claims = claims_of_web(&cluster).await;
    assert_eq!(claims.len(), 1, "one claim per pod claim: {claims:?}");
    converged.expect("the pod converges");
    assert_eq!(claim_status(&cluster.objects()), Some(claims[0].clone()));
    assert!(
        claim_reads(&journal, "list") >= 1,
        "a create without answer has no name to read: the namespace is listed"
    );
    cluster.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_created_claim_never_observed_does_not_hold_its_pod_forever() {
    // The claim watch delivers nothing: the claim is created and deleted again
    // without the informer ever seeing it.
    let faults = FaultConfig::new().watch(WatchFault::new().resources(CLAIMS).drop_events(1.0));
    let web = pod_with_template_claims("ns", "web", "", &[("gpu", "gpu")]);
    let cluster = cluster(faults, vec![namespace("ns"), template("ns", "gpu"), web]).await;
    let journal = Arc::new(Journal::new());
    let host = Host::start(
        cluster.client.clone(),
        host_config(&wasm_deciders(), journal.clone()),
    );
    let api: Api<ResourceClaim> = Api::namespaced(cluster.client.clone(), "ns");
    wait_until("the claim is created", Duration::from_secs(20), || {
        claim_status(&cluster.objects()).is_some()
    })
    .await;
    let first = claim_status(&cluster.objects()).unwrap();
    api.delete(&first, &DeleteParams::default()).await.unwrap();
    // The watch comes back: streams end, the informer relists.
    cluster.server.stop_faults();
    host.touch();

    let converged = host
        .wait_idle(
            Duration::from_millis(500),
            Duration::from_secs(1),
            Duration::from_secs(20),
        )
        .await;
    let polls = journal
        .entries()
        .iter()
        .filter(|e| matches!(e, Entry::Decision { key, .. } if key == "pod:ns/web"))
        .count();
    host.shutdown(Duration::from_secs(5)).await;
    converged.expect("the pod key settles");
    let claims = claims_of_web(&cluster).await;
    assert_eq!(claims.len(), 1, "{claims:?}");
    assert_ne!(claims[0], first, "the deleted claim was generated again");
    assert_eq!(claim_status(&cluster.objects()), Some(claims[0].clone()));
    assert!(polls < 20, "{polls} decisions for one pod");
    assert!(
        claim_reads(&journal, "get") >= 1,
        "the unconfirmed claim is read by name"
    );
    assert_eq!(
        claim_reads(&journal, "list"),
        0,
        "no namespace LIST per pod (quadratic at scale)"
    );
    cluster.server.shutdown().await;
}
