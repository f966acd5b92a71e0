//! End-to-end: the ephemeral-volume controller with the wasm guest (built by
//! `make guests`) against the embedded API server (upstream-behaviour §2).

use std::sync::Arc;

use rekon_contract::EphemeralVolumeWorld;
use rekon_controllers::decider::Slot;
use rekon_controllers::journal::Journal;
use rekon_runtime::{Engine, EngineConfig, World};
use rekon_simulate::{ClusterOptions, Deciders, Report, Step, simulate};
use rekon_tests::sim::*;
use serde_json::{Value, json};

/// Only this controller runs, on the built component.
async fn run_ephemeral(state: Vec<Value>, steps: Vec<Step>) -> Report {
    run_with(state, steps, ClusterOptions::default()).await
}

async fn run_with(state: Vec<Value>, steps: Vec<Step>, options: ClusterOptions) -> Report {
    let engine = Engine::new(EngineConfig::default()).expect("engine");
    let guest = engine
        .loader()
        .world(World::of::<rekon_contract::EphemeralVolumeWorld>())
        .file(rekon_runtime::testing::built_guest(
            "rekon_guest_ephemeral_volume",
        ))
        .expect("ephemeral-volume guest (run `make guests`)");
    assert_eq!(
        guest.world(),
        World::of::<rekon_contract::EphemeralVolumeWorld>()
    );
    let deciders =
        Deciders::new().with(Arc::new(Slot::<EphemeralVolumeWorld>::new(Arc::new(guest))));
    let options = ClusterOptions {
        controllers: "ephemeral-volume".parse().unwrap(),
        ..options
    };
    simulate(
        state,
        steps,
        options,
        quick(),
        deciders,
        Arc::new(Journal::new()),
    )
    .await
    .expect("simulation runs")
}

/// An ephemeral volume whose template carries labels and annotations.
fn labelled_volume(volume: &str, size: &str) -> Value {
    json!({"name": volume, "ephemeral": {"volumeClaimTemplate": {
        "metadata": {"labels": {"app": "web", "vol": volume}, "annotations": {"note": "from-template"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                 "resources": {"requests": {"storage": size}}}}}})
}

fn pvc_creates(report: &Report) -> Vec<(String, u16)> {
    writes(&report.journal)
        .into_iter()
        .filter(|(verb, resource, ..)| verb == "create" && resource == "persistentvolumeclaims")
        .map(|(_, _, _, name, code)| (name, code))
        .collect()
}

fn failed_binding_events(objects: &[Value]) -> Vec<&Value> {
    objects
        .iter()
        .filter(|o| o["kind"] == "Event" && o["reason"] == "FailedBinding")
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_with_two_ephemeral_volumes_gets_two_owned_pvcs() {
    let web = pod(
        "ns",
        "web",
        "",
        json!([
            labelled_volume("scratch", "1Gi"),
            pvc_volume("data", "shared"),
            labelled_volume("cache", "2Gi")
        ]),
    );
    let report = run_ephemeral(vec![namespace("ns"), web], vec![]).await;
    report.converged.as_ref().expect("converged");
    for (volume, size) in [("scratch", "1Gi"), ("cache", "2Gi")] {
        let name = format!("web-{volume}");
        let pvc = find(&report.objects, "PersistentVolumeClaim", "ns", &name)
            .unwrap_or_else(|| panic!("PVC {name} created"));
        assert_eq!(
            pvc["metadata"]["labels"],
            json!({"app": "web", "vol": volume})
        );
        assert_eq!(pvc["metadata"]["annotations"]["note"], "from-template");
        assert_eq!(pvc["spec"]["storageClassName"], "fast");
        assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], size);
        assert_eq!(
            pvc["metadata"]["ownerReferences"],
            json!([{"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "uid-pod-web",
                    "controller": true, "blockOwnerDeletion": true}])
        );
    }
    assert!(find(&report.objects, "PersistentVolumeClaim", "ns", "shared").is_none());
    let mut creates = pvc_creates(&report);
    creates.sort();
    assert_eq!(
        creates,
        [
            ("web-cache".to_string(), 200),
            ("web-scratch".to_string(), 200)
        ],
        "each PVC created once, with its exact name"
    );
    assert!(failed_binding_events(&report.objects).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_foreign_pvc_of_that_name_is_a_conflict_event_and_no_write() {
    let web = pod("ns", "web", "", json!([labelled_volume("scratch", "1Gi")]));
    let other = pod("ns", "other", "", json!([]));
    let mut foreign = pvc("ns", "web-scratch");
    controlled_by(&mut foreign, &other);
    let report = run_ephemeral(vec![namespace("ns"), web, other, foreign], vec![]).await;
    // The key keeps failing with backoff while the foreign PVC stays.
    let pvc = find(
        &report.objects,
        "PersistentVolumeClaim",
        "ns",
        "web-scratch",
    )
    .unwrap();
    assert_eq!(pvc["metadata"]["ownerReferences"][0]["name"], "other");
    assert!(pvc_creates(&report).is_empty(), "no write on a conflict");
    let events = failed_binding_events(&report.objects);
    assert!(!events.is_empty(), "a Warning Event on the pod");
    let text = events[0].to_string();
    assert!(text.contains("Warning"), "{text}");
    assert!(text.contains("web-scratch"), "{text}");
    assert!(text.contains("uid-pod-web"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_owned_pvc_is_recreated_while_the_pod_lives() {
    let web = pod("ns", "web", "", json!([labelled_volume("scratch", "1Gi")]));
    let script = steps(
        "- delete: {apiVersion: v1, kind: PersistentVolumeClaim, namespace: ns, name: web-scratch}",
    );
    // Without the pvc-protection admission plugin the delete is immediate (with
    // it, the PVC would stay deleting, still existing, until pvc-protection let go).
    let options = ClusterOptions {
        pvc_protection_admission: false,
        ..ClusterOptions::default()
    };
    let report = run_with(vec![namespace("ns"), web], script, options).await;
    report.converged.as_ref().expect("converged");
    let pvc = find(
        &report.objects,
        "PersistentVolumeClaim",
        "ns",
        "web-scratch",
    )
    .expect("re-created");
    assert!(pvc["metadata"]["deletionTimestamp"].is_null());
    assert_eq!(pvc["metadata"]["ownerReferences"][0]["uid"], "uid-pod-web");
    assert_eq!(
        pvc_creates(&report),
        [
            ("web-scratch".to_string(), 200),
            ("web-scratch".to_string(), 200)
        ],
        "created, then re-created after the delete"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleting_pod_gets_nothing() {
    let mut web = pod("ns", "web", "", json!([labelled_volume("scratch", "1Gi")]));
    web["metadata"]["deletionTimestamp"] = json!(DELETED_AT);
    web["metadata"]["finalizers"] = json!(["example.com/hold"]);
    let report = run_ephemeral(vec![namespace("ns"), web], vec![]).await;
    report.converged.as_ref().expect("converged");
    assert!(
        find(
            &report.objects,
            "PersistentVolumeClaim",
            "ns",
            "web-scratch"
        )
        .is_none()
    );
    assert!(pvc_creates(&report).is_empty());
}

/// A guest that reports every volume as a conflict with a 100 KiB message.
struct LoudConflict;

impl rekon_controllers::decider::Decider<EphemeralVolumeWorld> for LoudConflict {
    fn info(&self) -> rekon_controllers::decider::GuestInfo {
        rekon_controllers::decider::GuestInfo {
            name: "loud-conflict".into(),
            digest: "native".into(),
        }
    }

    fn decide(
        &self,
        _key: &str,
        input: rekon_guest::ephemeral::VolumeInput,
    ) -> Result<rekon_guest::ephemeral::VolumeDecision, rekon_controllers::decider::DecideError>
    {
        use rekon_guest::ephemeral::{ClaimConflict, VolumeAction, VolumeDecision};
        let volume = &input.volumes[0];
        Ok(VolumeDecision {
            actions: vec![VolumeAction::Conflict(ClaimConflict {
                volume: volume.name.clone(),
                claim_name: format!("{}-{}", input.pod.name, volume.name),
                message: "m".repeat(100 * 1024),
            })],
        })
    }
}

async fn run_loud(state: Vec<Value>) -> Report {
    let deciders = Deciders::new().with(Arc::new(Slot::<EphemeralVolumeWorld>::new(Arc::new(
        LoudConflict,
    ))));
    let options = ClusterOptions {
        controllers: "ephemeral-volume".parse().unwrap(),
        ..ClusterOptions::default()
    };
    simulate(
        state,
        vec![],
        options,
        quick(),
        deciders,
        Arc::new(Journal::new()),
    )
    .await
    .expect("simulation runs")
}

#[tokio::test(flavor = "multi_thread")]
async fn guest_text_in_a_warning_event_is_cut_to_the_event_note_limit() {
    let web = pod("ns", "web", "", json!([labelled_volume("scratch", "1Gi")]));
    let other = pod("ns", "other", "", json!([]));
    let mut foreign = pvc("ns", "web-scratch");
    controlled_by(&mut foreign, &other);
    let report = run_loud(vec![namespace("ns"), web, other, foreign]).await;
    let notes = event_notes(&report.objects, "Pod", "ns", "web");
    assert!(!notes.is_empty(), "a Warning Event on the pod");
    for note in &notes {
        assert!(
            note.len() <= rekon_controllers::budget::EVENT_NOTE_BYTES,
            "{} bytes",
            note.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conflict_without_a_conflicting_pvc_is_refused_and_its_text_never_published() {
    let web = pod("ns", "web", "", json!([labelled_volume("scratch", "1Gi")]));
    let report = run_loud(vec![namespace("ns"), web]).await;
    let notes = event_notes(&report.objects, "Pod", "ns", "web");
    assert!(
        notes.iter().all(|n| !n.contains("mmmm")),
        "the guest's text became an Event: {notes:?}"
    );
    assert!(pvc_creates(&report).is_empty());
}
