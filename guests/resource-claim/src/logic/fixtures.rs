//! Builders for the unit tests of both decisions.

use rekon_guest::model::{
    ConsumerReference, ObjectMeta, OwnerReference, Pod, PodPhase, PodResourceClaim,
    PodResourceClaimStatus, ResourceClaim, ResourceClaimTemplate,
};

use super::{DELETE_PROTECTION_FINALIZER, POD_CLAIM_NAME_ANNOTATION};

pub const NS: &str = "ns";
pub const DELETED_AT: &str = "2026-01-01T00:00:00Z";

pub fn meta(name: &str, resource_version: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: NS.into(),
        name: name.into(),
        uid: format!("{name}-uid"),
        resource_version: resource_version.into(),
        ..Default::default()
    }
}

/// A pending, unscheduled pod without claims.
pub fn pod(name: &str) -> Pod {
    Pod {
        meta: meta(name, "10"),
        ..Default::default()
    }
}

pub fn scheduled(mut pod: Pod) -> Pod {
    pod.node_name = "node-1".into();
    pod.phase = PodPhase::Running;
    pod
}

pub fn in_phase(mut pod: Pod, phase: PodPhase) -> Pod {
    pod.phase = phase;
    pod
}

pub fn pod_deleting(mut pod: Pod) -> Pod {
    pod.meta.deletion_timestamp = Some(DELETED_AT.into());
    pod
}

pub fn with_template_claim(mut pod: Pod, pod_claim: &str, template: &str) -> Pod {
    pod.resource_claims.push(PodResourceClaim {
        name: pod_claim.into(),
        resource_claim_name: None,
        resource_claim_template_name: Some(template.into()),
    });
    pod
}

pub fn with_direct_claim(mut pod: Pod, pod_claim: &str, claim: &str) -> Pod {
    pod.resource_claims.push(PodResourceClaim {
        name: pod_claim.into(),
        resource_claim_name: Some(claim.into()),
        resource_claim_template_name: None,
    });
    pod
}

/// A status entry; `None` records "intentionally no claim".
pub fn with_status(mut pod: Pod, pod_claim: &str, claim: Option<&str>) -> Pod {
    pod.resource_claim_statuses.push(PodResourceClaimStatus {
        name: pod_claim.into(),
        resource_claim_name: claim.map(Into::into),
    });
    pod
}

pub fn template(name: &str) -> ResourceClaimTemplate {
    let mut meta = meta(name, "4");
    meta.labels = vec![("team".into(), "ml".into())];
    meta.annotations = vec![("note".into(), "from-template".into())];
    ResourceClaimTemplate {
        meta,
        claim_spec_json: r#"{"devices":{"requests":[{"name":"gpu"}]}}"#.into(),
    }
}

pub fn claim(name: &str) -> ResourceClaim {
    ResourceClaim {
        meta: meta(name, "20"),
        ..Default::default()
    }
}

pub fn owner_ref(pod: &Pod) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: pod.meta.name.clone(),
        uid: pod.meta.uid.clone(),
        controller: true,
        block_owner_deletion: true,
    }
}

pub fn owned_by(mut claim: ResourceClaim, pod: &Pod) -> ResourceClaim {
    claim.meta.owner_references.push(owner_ref(pod));
    claim
}

/// Generated for `pod_claim` of `pod`: owned and annotated.
pub fn generated_for(claim: ResourceClaim, pod: &Pod, pod_claim: &str) -> ResourceClaim {
    let mut claim = owned_by(claim, pod);
    claim
        .meta
        .annotations
        .push((POD_CLAIM_NAME_ANNOTATION.into(), pod_claim.into()));
    claim
}

pub fn allocated(mut claim: ResourceClaim) -> ResourceClaim {
    claim.allocated = true;
    claim
}

pub fn protected(mut claim: ResourceClaim) -> ResourceClaim {
    claim
        .meta
        .finalizers
        .push(DELETE_PROTECTION_FINALIZER.into());
    claim
}

pub fn claim_deleting(mut claim: ResourceClaim) -> ResourceClaim {
    claim.meta.deletion_timestamp = Some(DELETED_AT.into());
    claim
}

pub fn reserved_for(mut claim: ResourceClaim, consumer: ConsumerReference) -> ResourceClaim {
    claim.reserved_for.push(consumer);
    claim
}

/// A `reservedFor` entry that is not a pod.
pub fn non_pod_consumer(name: &str) -> ConsumerReference {
    ConsumerReference {
        api_group: "example.com".into(),
        resource: "jobsets".into(),
        name: name.into(),
        uid: format!("{name}-uid"),
    }
}
