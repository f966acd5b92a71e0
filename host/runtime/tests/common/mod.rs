//! Model builders shared by the runtime tests and the decisions benchmark.
#![allow(dead_code)]

use rekon_contract::model::*;

pub const NS: &str = "default";
pub const PVC_FINALIZER: &str = "kubernetes.io/pvc-protection";
pub const DELETED_AT: &str = "2026-01-01T00:00:00Z";

pub fn meta(name: &str, uid: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: NS.into(),
        name: name.into(),
        uid: uid.into(),
        resource_version: "7".into(),
        labels: vec![("app".into(), "web".into())],
        ..ObjectMeta::default()
    }
}

/// A PVC with the protection finalizer; `deleting` sets a deletion timestamp.
pub fn pvc(name: &str, deleting: bool) -> Pvc {
    let mut meta = meta(name, &format!("uid-{name}"));
    meta.finalizers = vec![PVC_FINALIZER.into()];
    if deleting {
        meta.deletion_timestamp = Some(DELETED_AT.into());
    }
    Pvc { meta }
}

/// A scheduled, running pod mounting the PVC `claim`.
pub fn pod_using(name: &str, claim: &str) -> Pod {
    Pod {
        meta: meta(name, &format!("uid-{name}")),
        node_name: "node-1".into(),
        phase: PodPhase::Running,
        volumes: vec![PodVolume {
            name: "data".into(),
            source: VolumeSource::PersistentVolumeClaim(claim.into()),
        }],
        ..Pod::default()
    }
}

/// `n` running pods, each using its own PVC (none uses `data`).
pub fn unrelated_pods(n: usize) -> Vec<Pod> {
    (0..n)
        .map(|i| pod_using(&format!("pod-{i}"), &format!("other-{i}")))
        .collect()
}

/// The pvc-protection input of a deleting PVC `data` that none of `n` pods uses,
/// with the live list filled (the expensive, second phase of the decision).
pub fn unused_deleting_pvc(n: usize) -> PvcInput {
    PvcInput {
        pvc: pvc("data", true),
        cached_pods: unrelated_pods(n),
        live_pods: Some(unrelated_pods(n)),
    }
}

pub fn consumer(pod: &Pod) -> ConsumerReference {
    pod.consumer()
}

/// A claim reserved for `n` pods, half of them done, all known to the cache.
pub fn claim_with_reservations(n: usize) -> ClaimInput {
    let pods: Vec<Pod> = (0..n)
        .map(|i| {
            let mut pod = pod_using(&format!("pod-{i}"), "x");
            if i % 2 == 1 {
                pod.phase = PodPhase::Succeeded;
            }
            pod
        })
        .collect();
    let mut claim = ResourceClaim {
        meta: meta("gpu", "uid-gpu"),
        allocated: true,
        reserved_for: pods.iter().map(consumer).collect(),
    };
    claim.meta.finalizers = vec!["resource.kubernetes.io/delete-protection".into()];
    ClaimInput {
        claim,
        reservations: pods
            .into_iter()
            .map(|pod| Reservation {
                consumer: consumer(&pod),
                deleted: false,
                pod: PodLookup::Cached(pod),
            })
            .collect(),
        owner_pod: None,
    }
}

/// A pod with `n` claims generated from one template, none created yet.
pub fn pod_with_template_claims(n: usize) -> PodInput {
    let mut pod = pod_using("trainer", "scratch");
    pod.resource_claims = (0..n)
        .map(|i| PodResourceClaim {
            name: format!("gpu-{i}"),
            resource_claim_name: None,
            resource_claim_template_name: Some("gpu-template".into()),
        })
        .collect();
    PodInput {
        pod,
        claims: Vec::new(),
        owned_claims: Vec::new(),
        templates: vec![ResourceClaimTemplate {
            meta: meta("gpu-template", "uid-template"),
            claim_spec_json: r#"{"devices":{"requests":[{"name":"gpu"}]}}"#.into(),
        }],
    }
}
