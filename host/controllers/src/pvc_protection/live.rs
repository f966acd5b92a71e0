//! The live pod list pvc-protection asks for (upstream-behaviour §1.5), decoded
//! slim: serde skips every field the projection does not read (managedFields,
//! container specs, statuses), so a LIST of N pods never builds N typed Pods.

use std::collections::HashMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Client;
use kube::api::ListParams;
use kube::core::{ObjectList, Request};
use rekon_contract::project::{project_owner_reference, project_phase};
use rekon_guest::model;
use serde::Deserialize;

use crate::live_lists::paginated;
use crate::projection::pvc_names;

/// A pod of a live LIST: only what the pvc-protection decision and its
/// validation read (labels and annotations are not).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct LivePod {
    metadata: Meta,
    spec: Spec,
    status: Status,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Meta {
    namespace: String,
    name: String,
    uid: String,
    resource_version: String,
    /// Kept as sent: the wire format already is `metav1.Time`'s.
    deletion_timestamp: Option<String>,
    deletion_grace_period_seconds: Option<i64>,
    finalizers: Vec<String>,
    owner_references: Vec<OwnerReference>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Spec {
    node_name: String,
    volumes: Vec<Volume>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Volume {
    name: String,
    persistent_volume_claim: Option<ClaimSource>,
    /// Only its presence matters.
    ephemeral: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ClaimSource {
    claim_name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Status {
    phase: Option<String>,
}

impl LivePod {
    /// [`LivePod::project`], filed in `namespace`: every item of a namespaced
    /// LIST belongs to the listed namespace, whatever (or whether) its
    /// metadata says; an item without one must still block the PVCs it uses.
    pub fn project_in(mut self, namespace: &str) -> model::Pod {
        namespace.clone_into(&mut self.metadata.namespace);
        self.project()
    }

    /// The guest's pod, as [`rekon_contract::project::project_pod`] makes it
    /// minus labels, annotations and resource claims (no pvc decision reads them).
    pub fn project(self) -> model::Pod {
        let meta = self.metadata;
        model::Pod {
            meta: model::ObjectMeta {
                namespace: meta.namespace,
                name: meta.name,
                uid: meta.uid,
                resource_version: meta.resource_version,
                deletion_timestamp: meta.deletion_timestamp,
                deletion_grace_period_seconds: meta.deletion_grace_period_seconds,
                finalizers: meta.finalizers,
                owner_references: meta
                    .owner_references
                    .iter()
                    .map(project_owner_reference)
                    .collect(),
                ..Default::default()
            },
            node_name: self.spec.node_name,
            phase: project_phase(self.status.phase.as_deref()),
            volumes: self
                .spec
                .volumes
                .into_iter()
                .filter_map(|v| {
                    let source = if let Some(pvc) = v.persistent_volume_claim {
                        model::VolumeSource::PersistentVolumeClaim(pvc.claim_name)
                    } else if v.ephemeral.is_some() {
                        model::VolumeSource::Ephemeral
                    } else {
                        return None;
                    };
                    Some(model::PodVolume {
                        name: v.name,
                        source,
                    })
                })
                .collect(),
            ..Default::default()
        }
    }
}

/// The pods of one live LIST by the PVC keys (`ns/<pvc>`) they reference, directly
/// or as an ephemeral `<pod>-<volume>`: built once per LIST, so each key takes its
/// own users instead of scanning (and copying) the whole namespace.
pub type PodsByPvc = HashMap<String, Vec<model::Pod>>;

/// LISTs the pods of `namespace`, page by page, and indexes them by PVC.
pub async fn list(client: &Client, namespace: &str) -> Result<PodsByPvc, kube::Error> {
    paginated(
        &ListParams::default(),
        |params| async move {
            let request = Request::new(format!("/api/v1/namespaces/{namespace}/pods"))
                .list(&params)
                .map_err(kube::Error::BuildRequest)?;
            client.request::<ObjectList<LivePod>>(request).await
        },
        PodsByPvc::new,
        |by_pvc, pods| {
            index(
                by_pvc,
                pods.into_iter().map(|pod| pod.project_in(namespace)),
            );
        },
    )
    .await
}

fn index(by_pvc: &mut PodsByPvc, pods: impl Iterator<Item = model::Pod>) {
    for pod in pods {
        for key in pvc_names(&pod) {
            // Most PVCs have one user: a first push would reserve four.
            by_pvc
                .entry(key)
                .or_insert_with(|| Vec::with_capacity(1))
                .push(pod.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    fn pod_json() -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "namespace": "ns", "name": "web", "uid": "u1", "resourceVersion": "7",
                "deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30,
                "finalizers": ["f"], "labels": {"a": "b"},
                "managedFields": [{"manager": "x", "fieldsV1": {"f:spec": {}}}],
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                     "name": "rs", "uid": "o1", "controller": true}]
            },
            "spec": {
                "nodeName": "n1",
                "containers": [{"name": "c", "image": "i"}],
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": "claim"}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                    {"name": "cfg", "configMap": {"name": "c"}}
                ]
            },
            "status": {"phase": "Running"}
        })
    }

    #[test]
    fn slim_decode_projects_what_the_full_projection_does_minus_labels() {
        let slim: LivePod = serde_json::from_value(pod_json()).unwrap();
        let full: Pod = serde_json::from_value(pod_json()).unwrap();
        let mut expected = rekon_contract::project::project_pod(&full);
        expected.meta.labels.clear();
        assert_eq!(slim.project(), expected);
    }

    #[test]
    fn index_files_each_pod_under_every_pvc_it_references() {
        let pod = serde_json::from_value::<LivePod>(pod_json())
            .unwrap()
            .project();
        let other = model::Pod {
            meta: model::ObjectMeta {
                namespace: "ns".into(),
                name: "idle".into(),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut by_pvc = PodsByPvc::new();
        index(&mut by_pvc, [pod.clone(), other].into_iter());
        assert_eq!(by_pvc.len(), 2, "{by_pvc:?}");
        assert_eq!(by_pvc["ns/claim"], vec![pod.clone()]);
        assert_eq!(by_pvc["ns/web-scratch"], vec![pod]);
    }

    /// A client whose every request is answered with `body` (status 200).
    fn answering(body: serde_json::Value) -> Client {
        struct Canned(Vec<u8>);
        impl tower::Service<http::Request<kube::client::Body>> for Canned {
            type Response = http::Response<kube::client::Body>;
            type Error = std::convert::Infallible;
            type Future = std::future::Ready<Result<Self::Response, Self::Error>>;
            fn poll_ready(
                &mut self,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Result<(), Self::Error>> {
                std::task::Poll::Ready(Ok(()))
            }
            fn call(&mut self, _: http::Request<kube::client::Body>) -> Self::Future {
                std::future::ready(Ok(http::Response::new(self.0.clone().into())))
            }
        }
        Client::new(Canned(body.to_string().into_bytes()), "default")
    }

    #[tokio::test]
    async fn items_without_a_namespace_belong_to_the_listed_namespace() {
        let mut item = pod_json();
        item["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("namespace");
        let client = answering(json!({
            "apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": [item]
        }));
        let by_pvc = list(&client, "ns").await.unwrap();
        assert_eq!(by_pvc["ns/claim"][0].meta.name, "web", "{by_pvc:?}");
        assert_eq!(by_pvc["ns/claim"][0].meta.namespace, "ns");
        assert!(!by_pvc.contains_key("/claim"), "{by_pvc:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_list_longer_than_a_page_is_read_whole() {
        use rekon_apiserver::{ApiServer, ServerConfig};
        let n = 2 * crate::live_lists::PAGE as usize + 1;
        let server = ApiServer::start(ServerConfig::new(), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let mut objects =
            vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})];
        objects.extend((0..n).map(|i| {
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"namespace": "ns", "name": format!("pod-{i}")},
                   "spec": {"containers": [{"name": "c", "image": "i"}],
                            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": format!("c-{i}")}}]}})
        }));
        server.store().load_objects(objects).unwrap();
        let client = Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();
        let by_pvc = list(&client, "ns").await.unwrap();
        assert_eq!(by_pvc.len(), n);
        assert_eq!(
            by_pvc[&format!("ns/c-{}", n - 1)][0].meta.name,
            format!("pod-{}", n - 1)
        );
        server.shutdown().await;
    }
}
