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

use crate::cache::{ObjectKey, Projection};

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

fn key_of(meta: &model::ObjectMeta) -> ObjectKey {
    ObjectKey::new(meta.namespace.clone(), meta.name.clone())
}

fn version_of(meta: &model::ObjectMeta) -> u64 {
    meta.resource_version.parse().unwrap_or(0)
}

impl Projection for CachedPod {
    fn key(&self) -> ObjectKey {
        key_of(&self.pod.meta)
    }
    fn resource_version(&self) -> u64 {
        version_of(&self.pod.meta)
    }
}

impl Projection for model::Pvc {
    fn key(&self) -> ObjectKey {
        key_of(&self.meta)
    }
    fn resource_version(&self) -> u64 {
        version_of(&self.meta)
    }
}

impl Projection for model::ResourceClaim {
    fn key(&self) -> ObjectKey {
        key_of(&self.meta)
    }
    fn resource_version(&self) -> u64 {
        version_of(&self.meta)
    }
}

impl Projection for model::ResourceClaimTemplate {
    fn key(&self) -> ObjectKey {
        key_of(&self.meta)
    }
    fn resource_version(&self) -> u64 {
        version_of(&self.meta)
    }
}

pub fn pvc(pvc: &PersistentVolumeClaim) -> model::Pvc {
    project::project_pvc(pvc)
}

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
