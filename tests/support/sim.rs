//! Helpers for end-to-end scenarios: object builders, the built guests, running
//! a simulation, and reading its final objects and journal.

use std::sync::Arc;
use std::time::Duration;

use rekon_contract::{PvcProtectionWorld, ResourceClaimWorld};
use rekon_controllers::decider::Slot;
use rekon_controllers::journal::{Entry, Journal};
use rekon_runtime::{Engine, EngineConfig, World};
use rekon_simulate::{ClusterOptions, Deciders, Report, Settle, Step, simulate};
use serde_json::{Value, json};

pub const PVC_FINALIZER: &str = "kubernetes.io/pvc-protection";
pub const CLAIM_FINALIZER: &str = "resource.kubernetes.io/delete-protection";
pub const POD_CLAIM_NAME: &str = "resource.kubernetes.io/pod-claim-name";
pub const DELETED_AT: &str = "2026-01-01T00:00:00Z";

/// The reference guests as built by `make guests`, loaded as components.
pub fn wasm_deciders() -> Deciders {
    let engine = Engine::new(EngineConfig::default()).expect("engine");
    let pvc = engine
        .loader()
        .world(World::of::<rekon_contract::PvcProtectionWorld>())
        .file(rekon_runtime::testing::built_guest(
            "rekon_guest_pvc_protection",
        ))
        .expect("pvc-protection guest (run `make guests`)");
    let claim = engine
        .loader()
        .world(World::of::<rekon_contract::ResourceClaimWorld>())
        .file(rekon_runtime::testing::built_guest(
            "rekon_guest_resource_claim",
        ))
        .expect("resource-claim guest (run `make guests`)");
    Deciders::new()
        .with(Arc::new(Slot::<PvcProtectionWorld>::new(Arc::new(pvc))))
        .with(Arc::new(Slot::<ResourceClaimWorld>::new(Arc::new(claim))))
}

pub fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

pub fn pvc(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"namespace": ns, "name": name, "uid": format!("uid-pvc-{name}"),
                     "finalizers": [PVC_FINALIZER]},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    })
}

/// A PVC already being deleted (still protected).
pub fn deleting_pvc(ns: &str, name: &str) -> Value {
    let mut p = pvc(ns, name);
    p["metadata"]["deletionTimestamp"] = json!(DELETED_AT);
    p["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    p
}

/// A pod on `node` ("" = unscheduled) with the given volumes.
pub fn pod(ns: &str, name: &str, node: &str, volumes: Value) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "img"}], "volumes": volumes});
    if !node.is_empty() {
        spec["nodeName"] = json!(node);
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "uid": format!("uid-pod-{name}")},
        "spec": spec,
        "status": {"phase": "Running"}
    })
}

pub fn pvc_volume(volume: &str, claim: &str) -> Value {
    json!({"name": volume, "persistentVolumeClaim": {"claimName": claim}})
}

pub fn ephemeral_volume(volume: &str) -> Value {
    json!({"name": volume, "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}})
}

/// An owner reference making `pod` the controller.
pub fn controlled_by(obj: &mut Value, pod: &Value) {
    obj["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"],
        "uid": pod["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true
    }]);
}

pub fn steps(yaml: &str) -> Vec<Step> {
    rekon_simulate::parse_steps(yaml).expect("steps")
}

/// Runs a simulation with the wasm guests.
pub async fn run(
    state: Vec<Value>,
    steps: Vec<Step>,
    options: ClusterOptions,
    settle: Settle,
) -> Report {
    let journal = Arc::new(Journal::new());
    simulate(state, steps, options, settle, wasm_deciders(), journal)
        .await
        .expect("simulation runs")
}

pub fn quick() -> Settle {
    Settle {
        quiet: Duration::from_millis(300),
        requeue_bound: Duration::from_secs(2),
        timeout: Duration::from_secs(30),
    }
}

/// The object of `kind` named `ns/name` in the final state.
pub fn find<'a>(objects: &'a [Value], kind: &str, ns: &str, name: &str) -> Option<&'a Value> {
    objects.iter().find(|o| {
        o["kind"] == kind
            && o["metadata"]["namespace"].as_str().unwrap_or("") == ns
            && o["metadata"]["name"] == name
    })
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Journal write entries as (verb, resource, subresource, name, code).
pub fn writes(journal: &Journal) -> Vec<(String, String, Option<String>, String, u16)> {
    journal
        .entries()
        .into_iter()
        .filter_map(|e| match e {
            Entry::Write {
                verb,
                resource,
                subresource,
                name,
                code,
                ..
            } => Some((verb, resource, subresource, name, code)),
            _ => None,
        })
        .collect()
}

/// Decision outcomes for keys containing `key`, in order.
pub fn decisions(journal: &Journal, key: &str) -> Vec<Value> {
    journal
        .entries()
        .into_iter()
        .filter_map(|e| match e {
            Entry::Decision {
                key: k, outcome, ..
            } if k.contains(key) => Some(outcome),
            _ => None,
        })
        .collect()
}

pub fn template(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"namespace": ns, "name": name, "uid": format!("uid-tpl-{name}")},
        "spec": {"metadata": {"labels": {"team": "ml"}, "annotations": {"note": "from-template"}},
                 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
    })
}

/// A pod whose pod claims come from templates: `(pod claim name, template name)`.
pub fn pod_with_template_claims(
    ns: &str,
    name: &str,
    node: &str,
    claims: &[(&str, &str)],
) -> Value {
    let mut p = pod(ns, name, node, json!([]));
    p["spec"]["resourceClaims"] = claims
        .iter()
        .map(|(claim, tpl)| json!({"name": claim, "resourceClaimTemplateName": tpl}))
        .collect();
    p
}

/// A claim; `allocated` adds an allocation, `reserved_for` pod (name, uid) pairs.
pub fn claim(ns: &str, name: &str, allocated: bool, reserved_for: &[(&str, &str)]) -> Value {
    let mut c = json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"namespace": ns, "name": name, "uid": format!("uid-claim-{name}")},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
        "status": {}
    });
    if allocated {
        c["status"]["allocation"] = json!({"devices": {"results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}]}});
        c["metadata"]["finalizers"] = json!([CLAIM_FINALIZER]);
    }
    if !reserved_for.is_empty() {
        c["status"]["reservedFor"] = reserved_for
            .iter()
            .map(|(n, uid)| json!({"resource": "pods", "name": n, "uid": uid}))
            .collect();
    }
    c
}

/// Every ResourceClaim in the final state.
pub fn claims(objects: &[Value]) -> Vec<&Value> {
    objects
        .iter()
        .filter(|o| o["kind"] == "ResourceClaim")
        .collect()
}

/// Polls `done` every 10 ms until it holds; fails the test after `timeout`.
pub async fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + timeout;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// How many PVCs the embedded cluster still holds.
pub fn pvcs_left(cluster: &rekon_simulate::EmbeddedCluster) -> usize {
    cluster
        .objects()
        .iter()
        .filter(|o| o["kind"] == "PersistentVolumeClaim")
        .count()
}

/// The messages of the Events recorded about the object `kind` `ns/name`
/// (core/v1 `involvedObject`/`message` or events.k8s.io `regarding`/`note`).
pub fn event_notes(objects: &[Value], kind: &str, ns: &str, name: &str) -> Vec<String> {
    objects
        .iter()
        .filter(|o| o["kind"] == "Event")
        .filter_map(|e| {
            let (about, note) = match e.get("involvedObject") {
                Some(about) => (about, &e["message"]),
                None => (&e["regarding"], &e["note"]),
            };
            let matches =
                about["kind"] == kind && about["namespace"] == ns && about["name"] == name;
            matches.then(|| note.as_str().map(str::to_string)).flatten()
        })
        .collect()
}

/// Runs a simulation with the given deciders and a short settle: a refused
/// decision is retried with backoff and never converges.
pub async fn run_with(state: Vec<Value>, deciders: Deciders) -> Report {
    let settle = Settle {
        quiet: Duration::from_millis(300),
        requeue_bound: Duration::from_secs(2),
        timeout: Duration::from_secs(5),
    };
    let journal = Arc::new(Journal::new());
    simulate(
        state,
        vec![],
        ClusterOptions::default(),
        settle,
        deciders,
        journal,
    )
    .await
    .expect("simulation runs")
}

/// A controller module built by `make guests` (`rekon_guest_<name>.wasm`),
/// loaded as a component and described by itself.
pub fn controller_module(file_stem: &str) -> rekon_controllers::generic::ControllerModule {
    let engine = Engine::new(EngineConfig::default()).expect("engine");
    let guest = engine
        .loader()
        .world(World::of::<rekon_contract::ControllerWorld>())
        .file(rekon_runtime::testing::built_guest(file_stem))
        .unwrap_or_else(|e| panic!("{file_stem} (run `make guests`): {e}"));
    let description = guest.describe_controller().expect("describe");
    rekon_controllers::generic::ControllerModule::new(description, Arc::new(guest))
        .expect("a description the host accepts")
}

/// A PersistentVolume in `phase`, being deleted if `deleting`.
pub fn pv(name: &str, phase: &str, deleting: bool, finalizers: &[&str]) -> Value {
    let mut pv = json!({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": { "name": name, "finalizers": finalizers },
        "spec": { "capacity": { "storage": "1Gi" }, "accessModes": ["ReadWriteOnce"],
                  "hostPath": { "path": format!("/data/{name}") } },
        "status": { "phase": phase }
    });
    if deleting {
        pv["metadata"]["deletionTimestamp"] = json!(DELETED_AT);
    }
    pv
}

/// The `Foo` CustomResourceDefinition of guests/sample-controller.
pub fn foo_crd() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../guests/sample-controller/crd.yaml"
    ))
    .expect("guests/sample-controller/crd.yaml");
    serde_yaml::from_str(&text).expect("the Foo CRD is YAML")
}
