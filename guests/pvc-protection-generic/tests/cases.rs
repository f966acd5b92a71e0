//! The dedicated pvc-protection world's case files (`guests/pvc-protection/cases`)
//! hold for this module too: each model input is expressed as the generic
//! world's input (the PVC and pods as projected JSON, the live list as a read),
//! and each expected decision as its generic form.

use std::path::Path;

use rekon_guest::cases::{parse, read_dir, run_all};
use rekon_guest::controller::{
    Action, Decision, Input, Kind, Object, ReadRequest, ReadResult, Related,
};
use rekon_guest::model::{Pod, PvcAction, PvcDecision, PvcInput, VolumeSource};
use rekon_guest_pvc_protection_generic::logic;
use serde_json::{Value, json};

fn meta(meta: &rekon_guest::model::ObjectMeta) -> Value {
    json!({
        "namespace": meta.namespace, "name": meta.name, "uid": meta.uid,
        "resourceVersion": meta.resource_version,
        "deletionTimestamp": meta.deletion_timestamp,
        "deletionGracePeriodSeconds": meta.deletion_grace_period_seconds,
        "finalizers": meta.finalizers,
        "ownerReferences": meta.owner_references.iter().map(|r| json!({
            "apiVersion": r.api_version, "kind": r.kind, "name": r.name, "uid": r.uid,
            "controller": r.controller,
        })).collect::<Vec<_>>(),
    })
}

fn pod(pod: &Pod) -> String {
    let volumes: Vec<Value> = pod
        .volumes
        .iter()
        .map(|v| match &v.source {
            VolumeSource::PersistentVolumeClaim(claim) => {
                json!({ "name": v.name, "persistentVolumeClaim": { "claimName": claim } })
            }
            VolumeSource::Ephemeral => json!({ "name": v.name, "ephemeral": {} }),
        })
        .collect();
    json!({ "apiVersion": "v1", "kind": "Pod", "metadata": meta(&pod.meta),
            "spec": { "nodeName": pod.node_name, "volumes": volumes } })
    .to_string()
}

fn pods() -> Kind {
    Kind::new("", "v1", "Pod")
}

fn generic_input(input: &PvcInput) -> Input {
    Input {
        primary: json!({ "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta(&input.pvc.meta) })
            .to_string(),
        related: vec![Related {
            kind: pods(),
            objects: input.cached_pods.iter().map(pod).collect(),
        }],
        // The dedicated world's live list holds every pod of the namespace:
        // the module's list answer and its get of the owner both come from it.
        reads: input
            .live_pods
            .iter()
            .flat_map(|live| {
                live_reads(input).into_iter().map(|request| {
                    let objects = match &request {
                        ReadRequest::Get(get) => live
                            .iter()
                            .filter(|p| p.meta.name == get.name)
                            .map(pod)
                            .collect(),
                        ReadRequest::List(_) => live.iter().map(pod).collect(),
                    };
                    ReadResult { request, objects }
                })
            })
            .collect(),
        now: "2026-11-26T00:00:00Z".into(),
    }
}

/// What the module asks to read for `input`'s PVC.
fn live_reads(input: &PvcInput) -> Vec<ReadRequest> {
    let primary = generic_input(&PvcInput {
        live_pods: None,
        ..input.clone()
    })
    .primary;
    logic::live_reads(&Object::parse(&primary).expect("the adapter's PVC"))
}

fn generic_decision(input: &PvcInput, decision: PvcDecision) -> Decision {
    match decision {
        PvcDecision::NeedLivePods => Decision::Read(live_reads(input)),
        PvcDecision::Actions(actions) => Decision::Actions(
            actions
                .into_iter()
                .map(|a| match a {
                    PvcAction::AddFinalizer(_) => Action::AddFinalizer(logic::FINALIZER.into()),
                    PvcAction::RemoveFinalizer(_) => {
                        Action::RemoveFinalizer(logic::FINALIZER.into())
                    }
                })
                .collect(),
        ),
    }
}

#[test]
fn the_dedicated_worlds_cases_hold_through_the_adapter() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pvc-protection/cases");
    let files = read_dir(&dir);
    let counts = run_all(&files, |case| {
        let input: PvcInput = parse(&case.input).map_err(|e| format!("input: {e}"))?;
        let expect: PvcDecision = parse(&case.expect).map_err(|e| format!("expect: {e}"))?;
        let got = logic::decide(&generic_input(&input));
        let want = generic_decision(&input, expect);
        if got != want {
            return Err(format!("expected {want:?}\n      got {got:?}"));
        }
        Ok(())
    });
    let cases = counts.values().sum::<usize>();
    assert!(cases >= 24, "only {cases} cases");
}

#[test]
fn the_description_declares_only_the_finalizer_and_the_pod_list() {
    let description = logic::describe();
    assert_eq!(description.scope.finalizers, [logic::FINALIZER]);
    assert_eq!(description.scope.reads.len(), 1);
    assert!(description.scope.children.is_empty());
    assert!(!description.scope.delete_primary);
}
