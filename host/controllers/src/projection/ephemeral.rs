//! The ephemeral volumes' claim templates a cached pod keeps (the
//! ephemeral-volume controller's input, projected once per watch event).

use k8s_openapi::api::core::v1::Pod;
use rekon_guest::ephemeral::ClaimTemplate;

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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

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
