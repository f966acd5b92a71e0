//! Projections from k8s-openapi objects to the plain model records guests decide on.
//!
//! A projection keeps only what a decision or an index needs (plus labels and
//! annotations), so the same records serve as the cached form of each object and as
//! the guest input. They run on every watch event and every reconcile, so they borrow
//! and clone only the strings they keep.
//!
//! Determinism: labels and annotations come out sorted by key (k8s-openapi keeps them
//! in a `BTreeMap`, so iteration order already is key order). The
//! `kubectl.kubernetes.io/last-applied-configuration` annotation is dropped: it is a
//! full copy of the object that no decision reads, and keeping it would blow the
//! per-object cache budget.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ContainerStatus, PersistentVolumeClaim, Pod};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimTemplate};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    ObjectMeta, OwnerReference as K8sOwnerReference, Time,
};
use rekon_guest::model;

/// Annotations never projected (see the module docs).
const DROPPED_ANNOTATIONS: &[&str] = &["kubectl.kubernetes.io/last-applied-configuration"];

/// The wire format of `metav1.Time` (second precision, UTC).
const TIME_FORMAT: &str = "%Y-%m-%dT%H:%M:%SZ";

#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error("resourceclaimtemplate {namespace}/{name}: cannot encode spec.spec as JSON: {source}")]
    ClaimSpec {
        namespace: String,
        name: String,
        #[source]
        source: serde_json::Error,
    },
}

/// `metadata` → [`model::ObjectMeta`]; absent fields become empty.
pub fn project_meta(meta: &ObjectMeta) -> model::ObjectMeta {
    model::ObjectMeta {
        labels: project_pairs(meta.labels.as_ref()),
        annotations: project_annotations(meta.annotations.as_ref()),
        ..project_identity(meta)
    }
}

/// Everything of [`project_meta`] except labels and annotations (left empty).
fn project_identity(meta: &ObjectMeta) -> model::ObjectMeta {
    model::ObjectMeta {
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        resource_version: meta.resource_version.clone().unwrap_or_default(),
        deletion_timestamp: meta.deletion_timestamp.as_ref().map(format_time),
        deletion_grace_period_seconds: meta.deletion_grace_period_seconds,
        finalizers: meta.finalizers.clone().unwrap_or_default(),
        owner_references: meta
            .owner_references
            .as_deref()
            .unwrap_or_default()
            .iter()
            .map(project_owner_reference)
            .collect(),
        labels: Vec::new(),
        annotations: Vec::new(),
    }
}

/// A Pod: its PVC and ephemeral volumes, phase, node, resource claims and their statuses.
pub fn project_pod(pod: &Pod) -> model::Pod {
    let spec = pod.spec.as_ref();
    let status = pod.status.as_ref();
    model::Pod {
        meta: project_meta(&pod.metadata),
        node_name: spec.and_then(|s| s.node_name.clone()).unwrap_or_default(),
        phase: project_phase(status.and_then(|s| s.phase.as_deref())),
        volumes: spec
            .and_then(|s| s.volumes.as_deref())
            .unwrap_or_default()
            .iter()
            .filter_map(|v| {
                let source = if let Some(pvc) = &v.persistent_volume_claim {
                    model::VolumeSource::PersistentVolumeClaim(pvc.claim_name.clone())
                } else if v.ephemeral.is_some() {
                    model::VolumeSource::Ephemeral
                } else {
                    return None;
                };
                Some(model::PodVolume {
                    name: v.name.clone(),
                    source,
                })
            })
            .collect(),
        resource_claims: spec
            .and_then(|s| s.resource_claims.as_deref())
            .unwrap_or_default()
            .iter()
            .map(|c| model::PodResourceClaim {
                name: c.name.clone(),
                resource_claim_name: c.resource_claim_name.clone(),
                resource_claim_template_name: c.resource_claim_template_name.clone(),
            })
            .collect(),
        resource_claim_statuses: status
            .and_then(|s| s.resource_claim_statuses.as_deref())
            .unwrap_or_default()
            .iter()
            .map(|s| model::PodResourceClaimStatus {
                name: s.name.clone(),
                resource_claim_name: s.resource_claim_name.clone(),
            })
            .collect(),
    }
}

/// Whether any container (regular, init or ephemeral) may still be running.
///
/// Upstream's PodTerminated treats a container as running unless its state says
/// Terminated or Waiting, so an empty state counts as running. The model has no
/// container statuses; the host keeps this bit beside the cached pod for enqueueing.
pub fn any_container_running(pod: &Pod) -> bool {
    let Some(status) = pod.status.as_ref() else {
        return false;
    };
    [
        &status.container_statuses,
        &status.init_container_statuses,
        &status.ephemeral_container_statuses,
    ]
    .into_iter()
    .flat_map(|list| list.as_deref().unwrap_or_default())
    .any(container_may_run)
}

/// A PersistentVolumeClaim: metadata only (the protection decision needs no spec).
pub fn project_pvc(pvc: &PersistentVolumeClaim) -> model::Pvc {
    model::Pvc {
        meta: project_meta(&pvc.metadata),
    }
}

/// A ResourceClaim: whether it is allocated and who it is reserved for.
pub fn project_claim(claim: &ResourceClaim) -> model::ResourceClaim {
    let status = claim.status.as_ref();
    model::ResourceClaim {
        meta: project_meta(&claim.metadata),
        allocated: status.is_some_and(|s| s.allocation.is_some()),
        reserved_for: status
            .and_then(|s| s.reserved_for.as_deref())
            .unwrap_or_default()
            .iter()
            .map(|r| model::ConsumerReference {
                api_group: r.api_group.clone().unwrap_or_default(),
                resource: r.resource.clone(),
                name: r.name.clone(),
                uid: r.uid.clone(),
            })
            .collect(),
    }
}

/// A ResourceClaimTemplate.
///
/// `meta` identifies the template object (namespace, name, uid, resourceVersion ...),
/// but its labels and annotations are those of `spec.metadata`: the ones a generated
/// claim copies (upstream §3.5 step 6). The template object's own labels and
/// annotations are never copied anywhere, so they are not projected.
pub fn project_template(
    template: &ResourceClaimTemplate,
) -> Result<model::ResourceClaimTemplate, ProjectError> {
    let claim_spec_json =
        serde_json::to_string(&template.spec.spec).map_err(|source| ProjectError::ClaimSpec {
            namespace: template.metadata.namespace.clone().unwrap_or_default(),
            name: template.metadata.name.clone().unwrap_or_default(),
            source,
        })?;
    let claim_meta = template.spec.metadata.as_ref();
    Ok(model::ResourceClaimTemplate {
        meta: model::ObjectMeta {
            labels: project_pairs(claim_meta.and_then(|m| m.labels.as_ref())),
            annotations: project_annotations(claim_meta.and_then(|m| m.annotations.as_ref())),
            ..project_identity(&template.metadata)
        },
        claim_spec_json,
    })
}

/// Approximate bytes a projected pod occupies (the struct plus the heap it owns),
/// for the cache budget (<= 2 KiB per cached pod).
pub fn pod_footprint(pod: &model::Pod) -> usize {
    fn s(v: &String) -> usize {
        v.capacity()
    }
    fn opt(v: &Option<String>) -> usize {
        v.as_ref().map_or(0, String::capacity)
    }
    fn vec_of<T>(v: &[T], cap: usize, each: impl Fn(&T) -> usize) -> usize {
        cap * std::mem::size_of::<T>() + v.iter().map(each).sum::<usize>()
    }
    let m = &pod.meta;
    let meta = s(&m.namespace)
        + s(&m.name)
        + s(&m.uid)
        + s(&m.resource_version)
        + opt(&m.deletion_timestamp)
        + vec_of(&m.finalizers, m.finalizers.capacity(), s)
        + vec_of(&m.owner_references, m.owner_references.capacity(), |o| {
            s(&o.api_version) + s(&o.kind) + s(&o.name) + s(&o.uid)
        })
        + vec_of(&m.labels, m.labels.capacity(), |(k, v)| s(k) + s(v))
        + vec_of(&m.annotations, m.annotations.capacity(), |(k, v)| {
            s(k) + s(v)
        });
    std::mem::size_of::<model::Pod>()
        + meta
        + s(&pod.node_name)
        + vec_of(&pod.volumes, pod.volumes.capacity(), |v| {
            s(&v.name)
                + match &v.source {
                    model::VolumeSource::PersistentVolumeClaim(c) => s(c),
                    model::VolumeSource::Ephemeral => 0,
                }
        })
        + vec_of(&pod.resource_claims, pod.resource_claims.capacity(), |c| {
            s(&c.name) + opt(&c.resource_claim_name) + opt(&c.resource_claim_template_name)
        })
        + vec_of(
            &pod.resource_claim_statuses,
            pod.resource_claim_statuses.capacity(),
            |c| s(&c.name) + opt(&c.resource_claim_name),
        )
}

pub fn project_owner_reference(o: &K8sOwnerReference) -> model::OwnerReference {
    model::OwnerReference {
        api_version: o.api_version.clone(),
        kind: o.kind.clone(),
        name: o.name.clone(),
        uid: o.uid.clone(),
        controller: o.controller.unwrap_or(false),
        block_owner_deletion: o.block_owner_deletion.unwrap_or(false),
    }
}

pub fn project_phase(phase: Option<&str>) -> model::PodPhase {
    match phase {
        // The API server sets Pending at creation; an absent status means the same.
        None | Some("Pending") => model::PodPhase::Pending,
        Some("Running") => model::PodPhase::Running,
        Some("Succeeded") => model::PodPhase::Succeeded,
        Some("Failed") => model::PodPhase::Failed,
        Some(_) => model::PodPhase::Unknown,
    }
}

fn container_may_run(status: &ContainerStatus) -> bool {
    status
        .state
        .as_ref()
        .is_none_or(|s| s.terminated.is_none() && s.waiting.is_none())
}

fn format_time(time: &Time) -> String {
    time.0.strftime(TIME_FORMAT).to_string()
}

fn project_pairs(map: Option<&BTreeMap<String, String>>) -> Vec<(String, String)> {
    map.map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn project_annotations(map: Option<&BTreeMap<String, String>>) -> Vec<(String, String)> {
    map.map(|m| {
        m.iter()
            .filter(|(k, _)| !DROPPED_ANNOTATIONS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).expect("valid pod")
    }

    #[test]
    fn meta_keeps_identity_finalizers_owners_and_sorted_labels() {
        let meta: ObjectMeta = serde_json::from_value(json!({
            "namespace": "ns", "name": "a", "uid": "u1", "resourceVersion": "42",
            "deletionTimestamp": "2024-05-06T07:08:09Z", "deletionGracePeriodSeconds": 0,
            "finalizers": ["f1", "f2"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pu", "controller": true},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "ru"}
            ],
            "labels": {"z": "1", "a": "2"},
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{...}",
                "b": "x"
            },
            "managedFields": [{"manager": "kubectl", "operation": "Apply"}]
        }))
        .unwrap();
        let m = project_meta(&meta);
        assert_eq!((m.namespace.as_str(), m.name.as_str()), ("ns", "a"));
        assert_eq!((m.uid.as_str(), m.resource_version.as_str()), ("u1", "42"));
        assert_eq!(
            m.deletion_timestamp.as_deref(),
            Some("2024-05-06T07:08:09Z")
        );
        assert_eq!(m.deletion_grace_period_seconds, Some(0));
        assert_eq!(m.finalizers, ["f1", "f2"]);
        assert!(m.owner_references[0].controller);
        assert!(!m.owner_references[0].block_owner_deletion);
        assert!(!m.owner_references[1].controller);
        assert_eq!(m.owner_references[1].kind, "ReplicaSet");
        assert_eq!(
            m.labels,
            [("a".into(), "2".into()), ("z".into(), "1".into())]
        );
        assert_eq!(m.annotations, [("b".into(), "x".into())]);
    }

    #[test]
    fn empty_meta_projects_to_empty_strings() {
        let m = project_meta(&ObjectMeta::default());
        assert_eq!(m, model::ObjectMeta::default());
    }

    #[test]
    fn pod_keeps_only_pvc_and_ephemeral_volumes() {
        let p = project_pod(&pod(json!({
            "metadata": {"namespace": "ns", "name": "p", "uid": "u"},
            "spec": {
                "nodeName": "node-1",
                "containers": [],
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": "pvc-1"}},
                    {"name": "cfg", "configMap": {"name": "c"}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                    {"name": "tmp", "emptyDir": {}}
                ]
            },
            "status": {"phase": "Running"}
        })));
        assert_eq!(p.node_name, "node-1");
        assert_eq!(p.phase, model::PodPhase::Running);
        assert_eq!(
            p.volumes,
            [
                model::PodVolume {
                    name: "data".into(),
                    source: model::VolumeSource::PersistentVolumeClaim("pvc-1".into())
                },
                model::PodVolume {
                    name: "scratch".into(),
                    source: model::VolumeSource::Ephemeral
                },
            ]
        );
    }

    #[test]
    fn unscheduled_pod_without_status_is_pending_with_empty_node() {
        let p = project_pod(&pod(json!({
            "metadata": {"namespace": "ns", "name": "p"},
            "spec": {"containers": []}
        })));
        assert_eq!(p.node_name, "");
        assert!(!p.is_scheduled());
        assert_eq!(p.phase, model::PodPhase::Pending);
        assert!(p.volumes.is_empty());
    }

    #[test]
    fn pod_phases_map_one_to_one_and_unknown_strings_to_unknown() {
        for (raw, want) in [
            ("Pending", model::PodPhase::Pending),
            ("Running", model::PodPhase::Running),
            ("Succeeded", model::PodPhase::Succeeded),
            ("Failed", model::PodPhase::Failed),
            ("Unknown", model::PodPhase::Unknown),
            ("Bogus", model::PodPhase::Unknown),
        ] {
            let p = project_pod(&pod(json!({"metadata": {}, "status": {"phase": raw}})));
            assert_eq!(p.phase, want, "phase {raw}");
        }
    }

    #[test]
    fn pod_resource_claims_and_statuses_are_projected() {
        let p = project_pod(&pod(json!({
            "metadata": {"namespace": "ns", "name": "p"},
            "spec": {
                "containers": [],
                "resourceClaims": [
                    {"name": "gpu", "resourceClaimTemplateName": "gpu-template"},
                    {"name": "shared", "resourceClaimName": "shared-claim"}
                ]
            },
            "status": {"resourceClaimStatuses": [
                {"name": "gpu", "resourceClaimName": "p-gpu-abcde"},
                {"name": "skipped"}
            ]}
        })));
        assert_eq!(p.resource_claims.len(), 2);
        assert_eq!(
            p.resource_claims[0].resource_claim_template_name.as_deref(),
            Some("gpu-template")
        );
        assert_eq!(p.resource_claims[0].resource_claim_name, None);
        assert_eq!(
            p.resource_claims[1].resource_claim_name.as_deref(),
            Some("shared-claim")
        );
        assert_eq!(
            p.resource_claim_statuses,
            [
                model::PodResourceClaimStatus {
                    name: "gpu".into(),
                    resource_claim_name: Some("p-gpu-abcde".into())
                },
                model::PodResourceClaimStatus {
                    name: "skipped".into(),
                    resource_claim_name: None
                },
            ]
        );
    }

    #[test]
    fn container_running_follows_upstream_pod_terminated() {
        let with = |statuses: serde_json::Value| {
            any_container_running(&pod(json!({"metadata": {}, "status": statuses})))
        };
        assert!(!with(json!({})), "no statuses: nothing runs");
        assert!(!with(json!({"containerStatuses": [
            {"name": "a", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
             "state": {"terminated": {"exitCode": 0}}},
            {"name": "b", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
             "state": {"waiting": {"reason": "x"}}}
        ]})));
        assert!(with(json!({"containerStatuses": [
            {"name": "a", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
             "state": {"running": {}}}
        ]})));
        assert!(
            with(json!({"containerStatuses": [
                {"name": "a", "image": "i", "imageID": "", "ready": false, "restartCount": 0}
            ]})),
            "a status without state is neither terminated nor waiting"
        );
        assert!(
            with(json!({"initContainerStatuses": [
                {"name": "i", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"running": {}}}
            ]})),
            "init containers count"
        );
        assert!(
            with(json!({"ephemeralContainerStatuses": [
                {"name": "e", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"running": {}}}
            ]})),
            "ephemeral containers count"
        );
        assert!(!any_container_running(&pod(json!({"metadata": {}}))));
    }

    /// A pod as a Deployment creates it, after kubectl apply and a kubelet status.
    fn realistic_pod() -> Pod {
        let container = |name: &str| {
            json!({
                "name": name, "image": format!("registry.example.com/team/{name}:v1.2.3"),
                "args": ["--listen=:8080", "--log-level=info"],
                "env": [{"name": "MODE", "value": "production"}, {"name": "REGION", "value": "eu-west-1"}],
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                "volumeMounts": [{"name": "data", "mountPath": "/data"},
                                 {"name": "kube-api-access-x7k2q", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
            })
        };
        let status = |name: &str| {
            json!({"name": name, "image": "i", "imageID": "sha256:0123456789abcdef", "ready": true,
                   "restartCount": 0, "started": true, "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}})
        };
        pod(json!({
            "metadata": {
                "namespace": "payments", "name": "checkout-7d9f8b6c5d-x7k2q",
                "generateName": "checkout-7d9f8b6c5d-",
                "uid": "0b7e4a3c-5d2f-4e1a-9c8b-7a6d5e4f3c2b", "resourceVersion": "123456789",
                "labels": {"app": "checkout", "pod-template-hash": "7d9f8b6c5d", "tier": "backend"},
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": "x".repeat(3000),
                    "prometheus.io/scrape": "true"
                },
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "checkout-7d9f8b6c5d", "uid": "1c8f5b4d-6e3a-4f2b-8d9c-8b7e6f5a4d3c",
                    "controller": true, "blockOwnerDeletion": true}],
                "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                    "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}}}]
            },
            "spec": {
                "nodeName": "worker-node-3.eu-west-1.compute.internal",
                "containers": [container("app"), container("sidecar")],
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": "checkout-data"}},
                    {"name": "kube-api-access-x7k2q", "projected": {"sources": [
                        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}
                ]
            },
            "status": {
                "phase": "Running", "podIP": "10.0.3.17", "hostIP": "192.168.1.3",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [status("app"), status("sidecar")]
            }
        }))
    }

    #[test]
    fn a_projected_realistic_pod_fits_the_cache_budget() {
        let full = realistic_pod();
        let projected = project_pod(&full);
        let footprint = pod_footprint(&projected);
        let full_json = serde_json::to_vec(&full).unwrap().len();
        assert!(footprint <= 2048, "projected pod takes {footprint} bytes");
        assert!(
            footprint * 3 < full_json,
            "projection ({footprint} B) should be far smaller than the object ({full_json} B)"
        );
        // The footprint counts what the projection keeps.
        let mut bigger = projected.clone();
        let before = pod_footprint(&bigger);
        bigger.meta.labels.push(("k".repeat(100), "v".repeat(100)));
        assert!(pod_footprint(&bigger) >= before + 200);
    }

    #[test]
    fn pvc_projects_metadata() {
        let pvc: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"namespace": "ns", "name": "data", "uid": "u", "resourceVersion": "7",
                         "finalizers": ["kubernetes.io/pvc-protection"]},
            "spec": {"accessModes": ["ReadWriteOnce"]}
        }))
        .unwrap();
        let p = project_pvc(&pvc);
        assert_eq!(p.meta.name, "data");
        assert!(p.meta.has_finalizer("kubernetes.io/pvc-protection"));
        assert!(!p.meta.is_deleting());
    }

    #[test]
    fn claim_allocated_follows_status_allocation_and_keeps_reserved_for() {
        let unallocated: ResourceClaim = serde_json::from_value(json!({
            "metadata": {"namespace": "ns", "name": "c"},
            "spec": {}
        }))
        .unwrap();
        let c = project_claim(&unallocated);
        assert!(!c.allocated);
        assert!(c.reserved_for.is_empty());

        let allocated: ResourceClaim = serde_json::from_value(json!({
            "metadata": {"namespace": "ns", "name": "c"},
            "spec": {},
            "status": {
                "allocation": {},
                "reservedFor": [
                    {"resource": "pods", "name": "p", "uid": "pu"},
                    {"apiGroup": "example.com", "resource": "things", "name": "t", "uid": "tu"}
                ]
            }
        }))
        .unwrap();
        let c = project_claim(&allocated);
        assert!(c.allocated);
        assert!(c.reserved_for[0].is_pod());
        assert_eq!(c.reserved_for[0].uid, "pu");
        assert_eq!(c.reserved_for[1].api_group, "example.com");
        assert!(!c.reserved_for[1].is_pod());
    }

    #[test]
    fn template_carries_claim_spec_json_and_the_claim_metadata_labels() {
        let template: ResourceClaimTemplate = serde_json::from_value(json!({
            "metadata": {"namespace": "ns", "name": "gpu-template", "uid": "tu",
                         "resourceVersion": "3", "labels": {"template-only": "x"}},
            "spec": {
                "metadata": {"labels": {"team": "a"}, "annotations": {"note": "n"}},
                "spec": {"devices": {"requests": [{"name": "gpu",
                    "exactly": {"deviceClassName": "gpu.example.com"}}]}}
            }
        }))
        .unwrap();
        let t = project_template(&template).unwrap();
        assert_eq!(t.meta.name, "gpu-template");
        assert_eq!(t.meta.uid, "tu");
        assert_eq!(t.meta.labels, [("team".into(), "a".into())]);
        assert_eq!(t.meta.annotations, [("note".into(), "n".into())]);
        let spec: serde_json::Value = serde_json::from_str(&t.claim_spec_json).unwrap();
        assert_eq!(
            spec["devices"]["requests"][0]["exactly"]["deviceClassName"],
            "gpu.example.com"
        );
        // The JSON round-trips into the same typed spec the host will create claims with.
        let back: k8s_openapi::api::resource::v1::ResourceClaimSpec =
            serde_json::from_str(&t.claim_spec_json).unwrap();
        assert_eq!(back, template.spec.spec);
    }
}
