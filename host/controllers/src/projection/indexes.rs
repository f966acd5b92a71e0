//! The caches' indexes: which index values each projected object files under,
//! by Kubernetes' own naming rules (an ephemeral volume's PVC, the claim a pod
//! claim resolves to).

use rekon_guest::model;

use crate::cache::ObjectKey;
use crate::events::push_unique;

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

/// The PVC an ephemeral volume of `pod` gets: `<pod>-<volume>`, no suffix.
pub fn ephemeral_claim_name(pod: &model::Pod, volume: &str) -> String {
    format!("{}-{volume}", pod.meta.name)
}

/// Every PVC the pod references: the claimName of each PVC volume and the
/// ephemeral claim name of each ephemeral volume (no owner check). In volume
/// order, without duplicates.
pub fn pod_pvc_keys(pod: &model::Pod) -> Vec<ObjectKey> {
    let mut keys = Vec::with_capacity(pod.volumes.len());
    for volume in &pod.volumes {
        let name = match &volume.source {
            model::VolumeSource::PersistentVolumeClaim(claim) => claim.clone(),
            model::VolumeSource::Ephemeral => ephemeral_claim_name(pod, &volume.name),
        };
        push_unique(&mut keys, ObjectKey::new(pod.meta.namespace.as_str(), name));
    }
    keys
}

/// The name a pod claim resolves to (upstream `resourceclaim.Name`, 1.28+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimName<'a> {
    /// The claim's name. `check_owner`: the claim was generated for this pod, so
    /// it only counts if the pod controls it.
    Resolved { name: &'a str, check_owner: bool },
    /// The pod status records that no claim is needed (null name).
    NotNeeded,
    /// Template-based and not in the pod status yet.
    NotCreatedYet,
    /// Neither a claim name nor a template name.
    Unsupported,
}

pub fn resolve_claim_name<'a>(
    pod: &'a model::Pod,
    pod_claim: &'a model::PodResourceClaim,
) -> ClaimName<'a> {
    if let Some(name) = &pod_claim.resource_claim_name {
        return ClaimName::Resolved {
            name,
            check_owner: false,
        };
    }
    if pod_claim.resource_claim_template_name.is_none() {
        return ClaimName::Unsupported;
    }
    match pod
        .resource_claim_statuses
        .iter()
        .find(|s| s.name == pod_claim.name)
    {
        None => ClaimName::NotCreatedYet,
        Some(status) => match &status.resource_claim_name {
            None => ClaimName::NotNeeded,
            Some(name) => ClaimName::Resolved {
                name,
                check_owner: true,
            },
        },
    }
}

/// The templates the pod's claims are generated from.
pub fn pod_template_names(pod: &model::Pod) -> impl Iterator<Item = &str> {
    pod.resource_claims
        .iter()
        .filter_map(|c| c.resource_claim_template_name.as_deref())
}

/// The values `names` gives, `ns/<name>` in the pod's namespace, without duplicates.
fn in_namespace<'a>(pod: &model::Pod, names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut keys = Vec::new();
    for name in names {
        push_unique(&mut keys, ObjectKey::new(pod.meta.namespace.as_str(), name));
    }
    keys.iter().map(ToString::to_string).collect()
}

/// Index values: `ns/<pvc>` for each PVC the pod's volumes name.
pub fn pvc_names(pod: &model::Pod) -> Vec<String> {
    pod_pvc_keys(pod).iter().map(ToString::to_string).collect()
}

/// Index values: `ns/<claim>` for each claim name the pod resolves to; claims
/// not resolvable yet (or not needed) are not indexed.
pub fn claim_names(pod: &model::Pod) -> Vec<String> {
    let resolved = pod.resource_claims.iter().filter_map(|pod_claim| {
        match resolve_claim_name(pod, pod_claim) {
            ClaimName::Resolved { name, .. } => Some(name),
            _ => None,
        }
    });
    in_namespace(pod, resolved)
}

/// Index values: `ns/<template>` for each template the pod's claims are generated from.
pub fn template_names(pod: &model::Pod) -> Vec<String> {
    in_namespace(pod, pod_template_names(pod))
}

/// Index values: the UIDs of the claim's controlling `v1` `Pod` owner references.
pub fn owner_pod_uids(claim: &model::ResourceClaim) -> Vec<String> {
    claim
        .meta
        .owner_references
        .iter()
        .filter(|o| o.is_pod_controller())
        .map(|o| o.uid.clone())
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

    #[test]
    fn duplicates_are_indexed_once() {
        let mut p = pod();
        p.volumes.push(PodVolume {
            name: "again".into(),
            source: VolumeSource::PersistentVolumeClaim("shared".into()),
        });
        p.resource_claims.push(PodResourceClaim {
            name: "gpu2".into(),
            resource_claim_name: None,
            resource_claim_template_name: Some("gpu-template".into()),
        });
        assert_eq!(pvc_names(&p), vec!["ns/shared", "ns/web-scratch"]);
        assert_eq!(
            template_names(&p),
            vec!["ns/gpu-template", "ns/fpga-template"]
        );
        assert_eq!(ephemeral_claim_name(&p, "scratch"), "web-scratch");
    }

    #[test]
    fn resolution_follows_the_claim_source_and_the_pod_status() {
        let p = pod();
        let [direct, gpu, fpga] = &p.resource_claims[..] else {
            panic!("three pod claims")
        };
        let resolved = |name, check_owner| ClaimName::Resolved { name, check_owner };
        assert_eq!(resolve_claim_name(&p, direct), resolved("my-claim", false));
        assert_eq!(resolve_claim_name(&p, gpu), resolved("web-gpu-x7k2p", true));
        assert_eq!(resolve_claim_name(&p, fpga), ClaimName::NotNeeded);
        let pending = PodResourceClaim {
            name: "later".into(),
            resource_claim_name: None,
            resource_claim_template_name: Some("t".into()),
        };
        assert_eq!(resolve_claim_name(&p, &pending), ClaimName::NotCreatedYet);
        let neither = PodResourceClaim {
            name: "x".into(),
            ..Default::default()
        };
        assert_eq!(resolve_claim_name(&p, &neither), ClaimName::Unsupported);
    }

    #[test]
    fn owner_index_takes_only_a_controlling_pod() {
        let owner = |api_version: &str, kind: &str, uid: &str, controller| OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            uid: uid.into(),
            controller,
            ..Default::default()
        };
        let mut claim = ResourceClaim::default();
        claim.meta.owner_references = vec![
            owner("apps/v1", "ReplicaSet", "rs", true),
            owner("v1", "Pod", "not-controller", false),
            owner("v1", "Pod", "pu", true),
        ];
        assert_eq!(owner_pod_uids(&claim), vec!["pu"]);
    }
}
