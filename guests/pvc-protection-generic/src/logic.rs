//! PVC protection (upstream-behaviour §1) over generic projected objects: add
//! `kubernetes.io/pvc-protection` to every PVC not being deleted; remove it
//! from a deleting PVC only when no pod can use it — first by the cached pods
//! the index names, then, before any removal, by a live list of the
//! namespace's pods (the cache alone never proves "unused", §1.5).

use rekon_guest::controller::{
    Action, Decision, Description, Freshness, Input, Kind, ListRequest, Mapping, Object,
    ReadRequest, ReadScope, Scope, Watch,
};
use serde_json::Value;

pub const FINALIZER: &str = "kubernetes.io/pvc-protection";

fn pods() -> Kind {
    Kind::new("", "v1", "Pod")
}

/// The pod fields the decision reads.
fn pod_fields() -> Vec<String> {
    ["spec.nodeName", "spec.volumes"].map(String::from).to_vec()
}

pub fn describe() -> Description {
    Description {
        name: "pvc-protection-generic".into(),
        primary: Kind::new("", "v1", "PersistentVolumeClaim"),
        primary_fields: Vec::new(),
        watches: vec![Watch {
            kind: pods(),
            mapping: Mapping::FieldIndex("spec.volumes[*].persistentVolumeClaim.claimName".into()),
            fields: pod_fields(),
        }],
        scope: Scope {
            finalizers: vec![FINALIZER.into()],
            reads: vec![ReadScope {
                kind: pods(),
                fields: pod_fields(),
                // A deleting PVC gains no new pods (the scheduler and kubelet
                // refuse it), so a list issued after its deleting copy was
                // observed shows every pod that can still use it: the PVCs of a
                // namespace share one list, as the dedicated world's do.
                freshness: Freshness::AfterObserved,
                // Only the pods that name the PVC, as the dedicated world's
                // live list gives (not every pod of the namespace).
                related_only: true,
            }],
            ..Scope::default()
        },
    }
}

pub fn decide(input: &Input) -> Decision {
    let Ok(pvc) = Object::parse(&input.primary) else {
        return Decision::Actions(Vec::new());
    };
    let deleting = pvc.is_deleting();
    let protected = pvc.has_finalizer(FINALIZER);
    if !deleting && !protected {
        return Decision::Actions(vec![Action::AddFinalizer(FINALIZER.into())]);
    }
    if !(deleting && protected) {
        return Decision::Actions(Vec::new());
    }
    let cached = input.related.iter().flat_map(|r| &r.objects);
    if any_pod_uses(cached, &pvc) {
        return Decision::Actions(Vec::new());
    }
    let Some(live) = input.reads.iter().find(|r| r.request.kind() == &pods()) else {
        return Decision::Read(vec![ReadRequest::List(ListRequest {
            kind: pods(),
            ..ListRequest::default()
        })]);
    };
    if any_pod_uses(live.objects.iter(), &pvc) {
        return Decision::Actions(Vec::new());
    }
    Decision::Actions(vec![Action::RemoveFinalizer(FINALIZER.into())])
}

fn any_pod_uses<'a>(pods: impl Iterator<Item = &'a String>, pvc: &Object) -> bool {
    pods.filter_map(|text| Object::parse(text).ok())
        .any(|pod| pod_uses_pvc(&pod, pvc))
}

/// PodUsesPVC (§1.2) for a pod of the PVC's namespace.
fn pod_uses_pvc(pod: &Object, pvc: &Object) -> bool {
    if pod.namespace() != pvc.namespace() {
        return false;
    }
    // Unscheduled pods never use a PVC (§1.2).
    if pod.str("spec.nodeName").is_none_or(str::is_empty) {
        return false;
    }
    // Deleting with a grace period of 0: kubelet is done with its volumes.
    let shut_down = pod.is_deleting() && pod.i64("metadata.deletionGracePeriodSeconds") == Some(0);
    let volumes = pod.get("spec.volumes").and_then(Value::as_array);
    volumes.into_iter().flatten().any(|volume| {
        if let Some(claim) = volume.pointer("/persistentVolumeClaim/claimName") {
            return claim.as_str() == Some(pvc.name());
        }
        if volume.get("ephemeral").is_some() {
            let name = volume
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            return !shut_down
                && pvc.name() == format!("{}-{name}", pod.name())
                && pvc.is_controlled_by(pod.uid());
        }
        false
    })
}
