//! What the caches hold: projections of the watched objects.
//!
//! A cached pod is the guest's `model::Pod` plus the one fact the enqueue rules
//! need that decisions do not (whether a container still runs), so the cache never
//! keeps managedFields, container specs or anything else a decision does not read.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimTemplate};
use rekon_contract::project;
use rekon_guest::model;
use rekon_machinery::enqueue::PodView;

use std::sync::Arc;
use std::time::Instant;

use crate::cache::{Cache, ObjectKey, Projection};
use crate::context::Caches;

/// A pod as the caches keep it.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedPod {
    pub pod: model::Pod,
    /// Some container (init, app or ephemeral) is running, per the pod status.
    pub container_running: bool,
}

impl CachedPod {
    pub fn from_pod(pod: &Pod) -> Self {
        Self {
            pod: project::project_pod(pod),
            container_running: project::any_container_running(pod),
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
/// enough to release it, see `pvc_protection::LivePodLists`).
#[derive(Debug, Clone, PartialEq)]
pub struct CachedPvc {
    pub pvc: model::Pvc,
    pub observed: Instant,
}

impl CachedPvc {
    pub fn from_pvc(pvc: &PersistentVolumeClaim) -> Self {
        Self::observed_now(project::project_pvc(pvc))
    }

    pub fn observed_now(pvc: model::Pvc) -> Self {
        Self {
            pvc,
            observed: Instant::now(),
        }
    }
}

fn key_of(meta: &model::ObjectMeta) -> ObjectKey {
    ObjectKey::new(meta.namespace.clone(), meta.name.clone())
}

/// A watched resource: the API type, its projection and the cache holding it.
/// One impl per resource type; controllers name the types they watch.
pub trait Watched: Projection + Sized {
    type Object: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static;
    fn project(obj: &Self::Object) -> Self;
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

        impl Watched for $projection {
            type Object = $object;
            fn project(obj: &$object) -> Self {
                $project(obj)
            }
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
