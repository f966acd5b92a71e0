//! The `rekon run --embedded --demo` workload: a pod using a PVC and a pod with a
//! template claim, walked through their lives so both controllers show up in the log.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Pod};
use k8s_openapi::api::resource::v1::ResourceClaimTemplate;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

const NS: &str = "demo";

fn step(message: &str) {
    tracing::info!(demo = true, "demo: {message}");
}

pub async fn run(client: Client) -> anyhow::Result<()> {
    let pp = PostParams::default();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &pp,
            &serde_json::from_value(json!({"metadata": {"name": NS}}))?,
        )
        .await?;
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let templates: Api<ResourceClaimTemplate> = Api::namespaced(client.clone(), NS);

    step("creating PVC demo/data and pod demo/web (scheduled on node-a) that mounts it");
    pvcs.create(&pp, &serde_json::from_value(json!({
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }))?)
    .await?;
    pods.create(
        &pp,
        &serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {"nodeName": "node-a", "containers": [{"name": "web", "image": "nginx"}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}
        }))?,
    )
    .await?;

    step("creating ResourceClaimTemplate demo/gpu and pod demo/trainer that claims a GPU from it");
    templates
        .create(&pp, &serde_json::from_value(json!({
            "metadata": {"name": "gpu", "labels": {"team": "ml"}},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
        }))?)
        .await?;
    pods.create(
        &pp,
        &serde_json::from_value(json!({
            "metadata": {"name": "trainer"},
            "spec": {"containers": [{"name": "train", "image": "trainer"}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}
        }))?,
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(3)).await;

    step("deleting PVC demo/data while demo/web uses it: the finalizer keeps it");
    pvcs.delete("data", &DeleteParams::default()).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;

    step("pod demo/trainer finished (phase Succeeded): its generated claim goes away");
    pods.patch_status(
        "trainer",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Succeeded"}})),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(3)).await;

    step("deleting pod demo/web: once the kubelet finishes, PVC demo/data is released and removed");
    pods.delete("web", &DeleteParams::default()).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    step("done; the host keeps running until Ctrl-C");
    Ok(())
}
