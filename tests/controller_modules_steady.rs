//! The steady state of the four controller modules together (issue 22, "Done
//! when"): pv-protection, pvc-protection-generic, ttl-after-finished and
//! sample-controller converge a workload of each kind, and then the API server
//! receives no write for 30 s. The modules are the ones `make guests` builds
//! (the TypeScript two as `rekon_guest_<name>_ts.wasm`).
//!
//! Writes are counted at the server: a fault rule adding 1 ms to every create,
//! update, patch and delete is counted by the server's fault injector as each
//! request arrives, whatever its answer, whoever sent it.

use std::sync::Arc;
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use rekon_apiserver::{ApiServer, FaultConfig, RequestFault, Verb};
use rekon_controllers::generic::ControllerModule;
use rekon_controllers::host::{Host, HostConfig};
use rekon_controllers::journal::{Entry, Journal};
use rekon_simulate::{ClusterOptions, Deciders, EmbeddedCluster, host_config};
use rekon_tests::sim::*;
use serde_json::{Value, json};

/// How long the steady state is watched.
const STEADY: Duration = Duration::from_secs(30);

/// Every write request is held 1 ms, and so counted ("added latency").
fn counting_writes() -> FaultConfig {
    FaultConfig::new().request(
        RequestFault::new()
            .verbs([Verb::Create, Verb::Update, Verb::Patch, Verb::Delete])
            .latency(Duration::from_millis(1)),
    )
}

/// Write requests the server has received so far.
fn writes_received(server: &ApiServer) -> u64 {
    server.faults_injected()["added latency"]
}

fn modules() -> Vec<ControllerModule> {
    [
        "rekon_guest_pv_protection",
        "rekon_guest_pvc_protection_generic",
        "rekon_guest_ttl_after_finished_ts",
        "rekon_guest_sample_controller_ts",
    ]
    .into_iter()
    .map(controller_module)
    .collect()
}

// ---- the workload: each controller has work to do, then none ----

/// A finished Job, `ago` seconds ago, deleted `ttl` seconds after.
fn job(name: &str, ttl: i64, ago: i64) -> Value {
    let finished =
        (Utc::now() - chrono::Duration::seconds(ago)).to_rfc3339_opts(SecondsFormat::Secs, true);
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": { "namespace": "ns", "name": name },
        "spec": { "ttlSecondsAfterFinished": ttl,
                  "template": { "spec": { "restartPolicy": "Never",
                      "containers": [{ "name": "pi", "image": "perl:5.34" }] } } },
        "status": { "conditions": [{ "type": "Complete", "status": "True",
                                     "lastTransitionTime": finished }] }
    })
}

fn foo(name: &str, deployment: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": { "namespace": "ns", "name": name },
        "spec": { "deploymentName": deployment, "replicas": replicas }
    })
}

/// A Deployment nobody owns.
fn deployment(name: &str) -> Value {
    let labels = json!({ "app": "nginx" });
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "namespace": "ns", "name": name },
        "spec": { "replicas": 1, "selector": { "matchLabels": labels },
                  "template": { "metadata": { "labels": labels },
                                "spec": { "containers": [{ "name": "nginx", "image": "nginx" }] } } }
    })
}

fn workload() -> Vec<Value> {
    const PV: &str = "kubernetes.io/pv-protection";
    let mut unprotected = pvc("ns", "fresh");
    unprotected["metadata"]["finalizers"] = json!([]);
    vec![
        foo_crd(),
        namespace("ns"),
        // pv-protection: protect one, keep a bound one, release a deleting one.
        pv("available", "Available", false, &[]),
        pv("bound", "Bound", true, &[PV]),
        pv("released", "Released", true, &[PV]),
        // pvc-protection-generic: protect one, keep one in use, release one.
        unprotected,
        deleting_pvc("ns", "data"),
        pod("ns", "web", "node-a", json!([pvc_volume("v", "data")])),
        deleting_pvc("ns", "unused"),
        // ttl-after-finished: delete an expired Job, wait an hour for another.
        job("expired", 0, 60),
        job("later", 3600, 0),
        // sample-controller: create a Deployment; leave a foreign one alone.
        foo("example-foo", "example-foo", 2),
        deployment("taken"),
        foo("squatted", "taken", 1),
    ]
}

/// Writes (not reads) journaled after the first `skip` entries.
fn journaled_writes(journal: &Journal, skip: usize) -> Vec<Entry> {
    journal
        .entries()
        .into_iter()
        .skip(skip)
        .filter(|e| matches!(e, Entry::Write { verb, .. } if verb != "list" && verb != "get"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_four_controller_modules_send_no_write_for_30_s_once_settled() {
    let modules = modules();
    let selection: Vec<&str> = modules.iter().map(ControllerModule::name).collect();
    let controllers = selection.join(",").parse().unwrap();
    let options = ClusterOptions {
        faults: Some(counting_writes()),
        ..ClusterOptions::default()
    };
    let cluster = EmbeddedCluster::start(&options).await.expect("server");
    cluster
        .server
        .store()
        .load_objects(workload())
        .expect("the workload loads");
    let journal = Arc::new(Journal::new());
    let host = Host::start(
        cluster.client.clone(),
        HostConfig {
            controllers,
            modules: modules.into(),
            ..host_config(&Deciders::new(), journal.clone())
        },
    );
    let settle = quick();
    host.wait_idle(settle.quiet, settle.requeue_bound, settle.timeout)
        .await
        .expect("the workload converges");

    // Converged by the modules' own writes: each did its work.
    let objects = cluster.objects();
    let pv = find(&objects, "PersistentVolume", "", "available").expect("PV available");
    assert_eq!(finalizers(pv), ["kubernetes.io/pv-protection"]);
    assert!(find(&objects, "PersistentVolume", "", "released").is_none());
    let fresh = find(&objects, "PersistentVolumeClaim", "ns", "fresh").expect("PVC fresh");
    assert_eq!(finalizers(fresh), [PVC_FINALIZER]);
    assert!(find(&objects, "PersistentVolumeClaim", "ns", "data").is_some());
    assert!(find(&objects, "PersistentVolumeClaim", "ns", "unused").is_none());
    assert!(find(&objects, "Job", "ns", "expired").is_none());
    assert!(find(&objects, "Job", "ns", "later").is_some());
    let created = find(&objects, "Deployment", "ns", "example-foo").expect("created");
    assert_eq!(created["spec"]["replicas"], 2);
    let converging = writes_received(&cluster.server);
    assert!(
        converging >= 6,
        "the modules' writes were counted: {converging}"
    );

    let since = journal.entries().len();
    tokio::time::sleep(STEADY).await;
    let steady = writes_received(&cluster.server) - converging;
    assert_eq!(
        steady,
        0,
        "writes in the steady state: {:#?}",
        journaled_writes(&journal, since)
    );
    assert!(
        journaled_writes(&journal, since).is_empty(),
        "{:#?}",
        journaled_writes(&journal, since)
    );

    // Still running: a change is followed by a write again.
    let scale = steps(
        "- patch: { apiVersion: samplecontroller.k8s.io/v1alpha1, kind: Foo, namespace: ns,
             name: example-foo, type: merge, patch: { spec: { replicas: 3 } } }",
    );
    scale[0]
        .apply(&cluster.client)
        .await
        .expect("scale the Foo");
    host.touch();
    host.wait_idle(settle.quiet, settle.requeue_bound, settle.timeout)
        .await
        .expect("converges again");
    let scaled = cluster.objects();
    let deployment = find(&scaled, "Deployment", "ns", "example-foo").expect("example-foo");
    assert_eq!(deployment["spec"]["replicas"], 3);
    let after = writes_received(&cluster.server) - converging;
    assert!(after >= 2, "our patch and the Deployment's update: {after}");

    host.shutdown(Duration::from_secs(5)).await;
    cluster.server.shutdown().await;
}
