//! What the caches hold: projections of the watched objects.
//!
//! A cached pod is the guest's `model::Pod` plus the one fact the enqueue rules
//! need that decisions do not (whether a container still runs), so the cache never
//! keeps managedFields, container specs or anything else a decision does not read.
//! Pods and PVCs are cached without labels and annotations: no decision reads a
//! pod's or a PVC's (resource-claim copies the template's), and they are most of
//! a projected object's bytes (issue 12: <= 2 KiB per cached pod or PVC).

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimTemplate};
use rekon_contract::project;
use rekon_guest::ephemeral::ClaimTemplate;
use rekon_guest::model;

use std::sync::Arc;
use std::time::Instant;

use crate::cache::{Cache, ObjectKey, Projection, Reflected};
use crate::events::PodView;

mod indexes;

pub use indexes::*;

/// A pod as the caches keep it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CachedPod {
    pub pod: model::Pod,
    /// Some container (init, app or ephemeral) is running, per the pod status.
    pub container_running: bool,
    /// The ephemeral volumes' claim templates (the ephemeral-volume controller's input).
    pub ephemeral: Vec<EphemeralTemplate>,
}

impl CachedPod {
    pub fn from_pod(pod: &Pod) -> Self {
        let mut projected = project::project_pod(pod);
        unlabel(&mut projected.meta);
        Self {
            pod: projected,
            container_running: project::any_container_running(pod),
            ephemeral: templates(pod),
        }
    }

    /// The view the enqueue rules take.
    pub fn view(&self) -> PodView<'_> {
        PodView {
            pod: &self.pod,
            container_running: self.container_running,
        }
    }
}

/// A PVC as the caches keep it: the guest's `model::Pvc` and when the host
/// observed this copy (pvc-protection: a live pod list issued later is fresh
/// enough to release it, see `live_lists`).
#[derive(Debug, Clone, PartialEq)]
pub struct CachedPvc {
    pub pvc: model::Pvc,
    pub observed: Instant,
}

impl CachedPvc {
    pub fn from_pvc(pvc: &PersistentVolumeClaim) -> Self {
        let mut projected = project::project_pvc(pvc);
        unlabel(&mut projected.meta);
        Self::observed_now(projected)
    }

    pub fn observed_now(pvc: model::Pvc) -> Self {
        Self {
            pvc,
            observed: Instant::now(),
        }
    }
}

/// Every cache the controllers share, with its indexes.
pub struct Caches {
    pub pods: Arc<Cache<CachedPod>>,
    pub pvcs: Arc<Cache<CachedPvc>>,
    pub claims: Arc<Cache<model::ResourceClaim>>,
    pub templates: Arc<Cache<model::ResourceClaimTemplate>>,
}

impl Caches {
    pub fn new() -> Self {
        Self {
            pods: Arc::new(
                Cache::new()
                    .with_index(PODS_BY_PVC, |p: &CachedPod| pvc_names(&p.pod))
                    .with_index(PODS_BY_CLAIM, |p: &CachedPod| claim_names(&p.pod))
                    .with_index(PODS_BY_TEMPLATE, |p: &CachedPod| template_names(&p.pod)),
            ),
            pvcs: Arc::new(Cache::new()),
            claims: Arc::new(
                Cache::new()
                    .with_index(CLAIMS_BY_OWNER_UID, owner_pod_uids)
                    .with_index(CLAIMS_BY_ALLOCATION, |c: &model::ResourceClaim| {
                        c.allocated
                            .then(|| ALLOCATED.to_string())
                            .into_iter()
                            .collect()
                    }),
            ),
            templates: Arc::new(Cache::new()),
        }
    }
}

impl Default for Caches {
    fn default() -> Self {
        Self::new()
    }
}

/// One ephemeral volume's claim template, as the pod cache keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct EphemeralTemplate {
    pub volume: String,
    pub template: ClaimTemplate,
}

/// The ephemeral volumes of `pod`, in `spec.volumes` order: labels and
/// annotations sorted by key (they are BTreeMaps), the spec encoded once per
/// watch event. Empty for the many pods without ephemeral volumes.
pub fn templates(pod: &Pod) -> Vec<EphemeralTemplate> {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
    let pairs = |map: Option<&std::collections::BTreeMap<String, String>>| {
        map.into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    volumes
        .into_iter()
        .flatten()
        .filter_map(|volume| {
            let template = volume.ephemeral.as_ref()?.volume_claim_template.as_ref()?;
            let meta = template.metadata.as_ref();
            Some(EphemeralTemplate {
                volume: volume.name.clone(),
                template: ClaimTemplate {
                    labels: pairs(meta.and_then(|m| m.labels.as_ref())),
                    annotations: pairs(meta.and_then(|m| m.annotations.as_ref())),
                    spec_json: serde_json::to_string(&template.spec)
                        .expect("a typed PersistentVolumeClaimSpec always encodes"),
                },
            })
        })
        .collect()
}

/// Drops labels and annotations (see the module docs), with their capacity.
fn unlabel(meta: &mut model::ObjectMeta) {
    meta.labels = Vec::new();
    meta.annotations = Vec::new();
}

fn key_of(meta: &model::ObjectMeta) -> ObjectKey {
    ObjectKey::new(meta.namespace.clone(), meta.name.clone())
}

/// A watched resource whose cache lives in [`Caches`].
/// One impl per resource type; controllers name the types they watch.
pub trait Watched: Reflected {
    fn cache(caches: &Caches) -> &Arc<Cache<Self>>;
}

macro_rules! watched {
    ($projection:ty, $object:ty, $project:expr, $cache:ident) => {
        impl Projection for $projection {
            fn key(&self) -> ObjectKey {
                key_of(meta_of(self))
            }
            fn resource_version(&self) -> &str {
                &meta_of(self).resource_version
            }
        }

        impl Reflected for $projection {
            type Object = $object;
            fn project(obj: &$object) -> Self {
                $project(obj)
            }
        }

        impl Watched for $projection {
            fn cache(caches: &Caches) -> &Arc<Cache<Self>> {
                &caches.$cache
            }
        }
    };
}

trait HasMeta {
    fn meta(&self) -> &model::ObjectMeta;
}
impl HasMeta for CachedPod {
    fn meta(&self) -> &model::ObjectMeta {
        &self.pod.meta
    }
}
impl HasMeta for CachedPvc {
    fn meta(&self) -> &model::ObjectMeta {
        &self.pvc.meta
    }
}
macro_rules! has_meta {
    ($($ty:ty),*) => {$(
        impl HasMeta for $ty {
            fn meta(&self) -> &model::ObjectMeta { &self.meta }
        }
    )*};
}
has_meta!(model::ResourceClaim, model::ResourceClaimTemplate);

fn meta_of(obj: &impl HasMeta) -> &model::ObjectMeta {
    obj.meta()
}

watched!(CachedPod, Pod, CachedPod::from_pod, pods);
watched!(CachedPvc, PersistentVolumeClaim, CachedPvc::from_pvc, pvcs);
watched!(model::ResourceClaim, ResourceClaim, claim, claims);
watched!(
    model::ResourceClaimTemplate,
    ResourceClaimTemplate,
    template,
    templates
);

pub fn claim(claim: &ResourceClaim) -> model::ResourceClaim {
    project::project_claim(claim)
}

pub fn template(template: &ResourceClaimTemplate) -> model::ResourceClaimTemplate {
    // Encoding a typed ResourceClaimSpec as JSON cannot fail; a template that
    // somehow did would be logged and cached without a spec (creates then fail validation).
    project::project_template(template).unwrap_or_else(|err| {
        tracing::error!(error = %err, "cannot project a ResourceClaimTemplate");
        model::ResourceClaimTemplate::default()
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cached_pods_and_pvcs_keep_no_labels_or_annotations_and_fit_the_budget() {
        let meta = json!({"namespace": "ns", "name": "web-0", "uid": "0b5c5bd0-6f3a-4b59-9d7a-1c2a3e4f5a6b",
            "resourceVersion": "123456", "labels": {"app": "web", "pod-template-hash": "5d8f7c9b6"},
            "annotations": {"note": "x".repeat(500)}});
        let pod: Pod =
            serde_json::from_value(json!({"metadata": meta, "spec": {"nodeName": "node-1",
            "containers": [{"name": "c"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}}]}}))
            .unwrap();
        let cached = CachedPod::from_pod(&pod);
        assert!(cached.pod.meta.labels.is_empty() && cached.pod.meta.annotations.is_empty());
        assert_eq!(cached.pod.volumes.len(), 1);
        assert!(
            project::pod_footprint(&cached.pod) <= 1024,
            "{}",
            project::pod_footprint(&cached.pod)
        );
        let pvc: PersistentVolumeClaim = serde_json::from_value(json!({"metadata": meta})).unwrap();
        let cached = CachedPvc::from_pvc(&pvc);
        assert!(cached.pvc.meta.labels.is_empty() && cached.pvc.meta.annotations.is_empty());
        assert_eq!(cached.pvc.meta.name, "web-0");
    }

    pub(crate) fn k8s_pod(uid: &str, deleting: bool) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"namespace": "ns", "name": "web", "uid": uid,
                         "deletionTimestamp": deleting.then_some("2026-01-01T00:00:00Z")},
            "spec": {"containers": [], "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "shared"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                    "metadata": {"labels": {"z": "1", "a": "2"}},
                    "spec": {"accessModes": ["ReadWriteOnce"]}}}}
            ]}
        }))
        .unwrap()
    }

    #[test]
    fn templates_project_only_ephemeral_volumes_sorted() {
        let templates = templates(&k8s_pod("u1", false));
        assert_eq!(templates.len(), 1);
        assert_eq!(templates[0].volume, "scratch");
        let keys: Vec<&str> = templates[0]
            .template
            .labels
            .iter()
            .map(|l| l.0.as_str())
            .collect();
        assert_eq!(keys, ["a", "z"]);
        assert_eq!(
            templates[0].template.spec_json,
            r#"{"accessModes":["ReadWriteOnce"]}"#
        );
    }
}
