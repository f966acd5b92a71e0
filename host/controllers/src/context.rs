//! What every controller shares: the client, the projected caches and their
//! indexes, the journal and the Kubernetes event recorder.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use rekon_guest::model;
use rekon_machinery::enqueue::{pvc_protection, resource_claim};

use crate::cache::Cache;
use crate::journal::Journal;
use crate::observe::Observer;
use crate::pool::DecisionPool;
use crate::projection::{CachedPod, CachedPvc};

/// Pod index: `ns/<pvc>` for each PVC the pod's volumes name (ephemeral: `<pod>-<volume>`).
pub const PODS_BY_PVC: &str = "pvc";
/// Pod index: `ns/<claim>` for each ResourceClaim name the pod resolves to.
pub const PODS_BY_CLAIM: &str = "claim";
/// Pod index: `ns/<template>` for each ResourceClaimTemplate the pod references.
pub const PODS_BY_TEMPLATE: &str = "template";
/// Claim index: the UID of the controlling owner pod.
pub const CLAIMS_BY_OWNER_UID: &str = "owner-uid";
/// Claim index: [`ALLOCATED`] for allocated claims (the claim gauge counts it).
pub const CLAIMS_BY_ALLOCATION: &str = "allocation";
pub const ALLOCATED: &str = "allocated";

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

fn keys(keys: Vec<rekon_machinery::ObjectKey>) -> Vec<String> {
    keys.iter().map(ToString::to_string).collect()
}

/// Index values: `ns/<pvc>` for each PVC the pod's volumes name.
pub fn pvc_names(pod: &model::Pod) -> Vec<String> {
    keys(pvc_protection::pod_pvc_keys(pod))
}

/// Index values: `ns/<claim>` for each claim name the pod resolves to.
pub fn claim_names(pod: &model::Pod) -> Vec<String> {
    keys(resource_claim::pod_claim_index_keys(pod))
}

fn template_names(pod: &model::Pod) -> Vec<String> {
    keys(resource_claim::pod_template_index_keys(pod))
}

fn owner_pod_uids(claim: &model::ResourceClaim) -> Vec<String> {
    resource_claim::claim_owner_pod_uids(claim)
        .map(str::to_string)
        .collect()
}

pub struct Context {
    pub client: Client,
    pub caches: Caches,
    pub journal: Arc<Journal>,
    pub observer: Arc<dyn Observer>,
    /// Where decisions run (blocking threads, bounded).
    pub pool: DecisionPool,
    recorder: Recorder,
}

impl Context {
    pub fn new(client: Client, journal: Arc<Journal>, observer: Arc<dyn Observer>) -> Self {
        let reporter = Reporter {
            controller: "rekon".into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            caches: Caches::new(),
            journal,
            observer,
            pool: DecisionPool::default(),
        }
    }

    /// Records a Kubernetes Event on `object`; failures to record are only logged.
    pub async fn event(
        &self,
        object: ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.into(),
            // Guest text can reach a note: cut to what the API accepts.
            note: Some(crate::budget::cut(&note, crate::budget::EVENT_NOTE_BYTES)),
            action: action.into(),
            secondary: None,
        };
        if let Err(err) = self.recorder.publish(&event, &object).await {
            tracing::debug!(error = %err, reason, "could not record an event");
        }
    }
}

/// An ObjectReference for events.
pub fn reference(kind: &str, api_version: &str, meta: &model::ObjectMeta) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.into()),
        kind: Some(kind.into()),
        namespace: Some(meta.namespace.clone()),
        name: Some(meta.name.clone()),
        uid: Some(meta.uid.clone()),
        resource_version: Some(meta.resource_version.clone()),
        ..ObjectReference::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rekon_guest::model::*;

    fn pod() -> Pod {
        Pod {
            meta: ObjectMeta {
                namespace: "ns".into(),
                name: "web".into(),
                uid: "u1".into(),
                ..Default::default()
            },
            volumes: vec![
                PodVolume {
                    name: "data".into(),
                    source: VolumeSource::PersistentVolumeClaim("shared".into()),
                },
                PodVolume {
                    name: "scratch".into(),
                    source: VolumeSource::Ephemeral,
                },
            ],
            resource_claims: vec![
                PodResourceClaim {
                    name: "direct".into(),
                    resource_claim_name: Some("my-claim".into()),
                    resource_claim_template_name: None,
                },
                PodResourceClaim {
                    name: "gpu".into(),
                    resource_claim_name: None,
                    resource_claim_template_name: Some("gpu-template".into()),
                },
                PodResourceClaim {
                    name: "fpga".into(),
                    resource_claim_name: None,
                    resource_claim_template_name: Some("fpga-template".into()),
                },
            ],
            resource_claim_statuses: vec![
                PodResourceClaimStatus {
                    name: "gpu".into(),
                    resource_claim_name: Some("web-gpu-x7k2p".into()),
                },
                PodResourceClaimStatus {
                    name: "fpga".into(),
                    resource_claim_name: None,
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn pvc_index_names_direct_and_ephemeral_claims() {
        assert_eq!(pvc_names(&pod()), vec!["ns/shared", "ns/web-scratch"]);
    }

    #[test]
    fn claim_index_resolves_through_the_status_and_skips_null_entries() {
        assert_eq!(claim_names(&pod()), vec!["ns/my-claim", "ns/web-gpu-x7k2p"]);
    }

    #[test]
    fn template_index_names_each_template() {
        assert_eq!(
            template_names(&pod()),
            vec!["ns/gpu-template", "ns/fpga-template"]
        );
    }
}
