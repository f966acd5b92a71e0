//! The caches' indexes: which index values each projected object files under.

use rekon_guest::model;
use rekon_machinery::enqueue::{pvc_protection, resource_claim};

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

pub fn template_names(pod: &model::Pod) -> Vec<String> {
    keys(resource_claim::pod_template_index_keys(pod))
}

pub fn owner_pod_uids(claim: &model::ResourceClaim) -> Vec<String> {
    resource_claim::claim_owner_pod_uids(claim)
        .map(str::to_string)
        .collect()
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
