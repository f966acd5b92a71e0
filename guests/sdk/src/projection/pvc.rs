//! What the pvc-protection decision reads (`pvc-decider@0.2.0`).

use serde::{Deserialize, Serialize};

use crate::model;

/// The PVC of the key.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct Pvc {
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub deleting: bool,
    pub finalizers: Vec<String>,
    /// The uid of the controlling owner reference.
    pub controller_uid: Option<String>,
}

/// A pod volume that names a claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Volume {
    /// `persistentVolumeClaim.claimName`.
    Claim(String),
    /// An ephemeral volume, by volume name: its PVC is `<pod>-<volume>`.
    Ephemeral(String),
}

/// A pod of the PVC's namespace.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct Pod {
    pub name: String,
    pub uid: String,
    pub scheduled: bool,
    pub shut_down: bool,
    pub volumes: Vec<Volume>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct PvcInput {
    pub pvc: Pvc,
    pub cached_pods: Vec<Pod>,
    /// `None` until the guest asked for the live list (WIT: `live-listed`).
    pub live_pods: Option<Vec<Pod>>,
}

impl Pvc {
    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }

    /// The PVC's target as the guest sees it now.
    pub fn target(&self) -> model::Target {
        model::Target {
            name: self.name.clone(),
            uid: self.uid.clone(),
            resource_version: self.resource_version.clone(),
        }
    }
}

impl From<model::PvcInput> for PvcInput {
    fn from(input: model::PvcInput) -> Self {
        let namespace = input.pvc.meta.namespace.clone();
        // A claimName only means something inside the pod's own namespace.
        let project = |pods: Vec<model::Pod>| -> Vec<Pod> {
            pods.into_iter()
                .filter(|pod| pod.meta.namespace == namespace)
                .map(Pod::from)
                .collect()
        };
        Self {
            cached_pods: project(input.cached_pods),
            live_pods: input.live_pods.map(project),
            pvc: input.pvc.into(),
        }
    }
}

impl From<model::Pvc> for Pvc {
    fn from(pvc: model::Pvc) -> Self {
        let meta = pvc.meta;
        Self {
            deleting: meta.is_deleting(),
            controller_uid: meta
                .owner_references
                .into_iter()
                .find(|o| o.controller)
                .map(|o| o.uid),
            name: meta.name,
            uid: meta.uid,
            resource_version: meta.resource_version,
            finalizers: meta.finalizers,
        }
    }
}

impl From<model::Pod> for Pod {
    fn from(pod: model::Pod) -> Self {
        Self {
            scheduled: pod.is_scheduled(),
            shut_down: pod.is_shut_down(),
            volumes: pod
                .volumes
                .into_iter()
                .map(|volume| match volume.source {
                    model::VolumeSource::PersistentVolumeClaim(claim) => Volume::Claim(claim),
                    model::VolumeSource::Ephemeral => Volume::Ephemeral(volume.name),
                })
                .collect(),
            name: pod.meta.name,
            uid: pod.meta.uid,
        }
    }
}
