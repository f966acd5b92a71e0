//! The `rekon run --embedded --demo` workload: a pod using a PVC, a pod with a
//! template claim and a pod with an ephemeral volume, walked through their lives
//! so each of the three controllers shows up in the log.
//!
//! [`prepare`] runs before the controllers start: the namespace and the
//! ResourceClaimTemplate are then in the controllers' first list, and a
//! controller's workers start only once its caches have synced, so the pod that
//! claims from the template is never decided on before the template is cached.
//! [`run`] then creates the pods and waits for each controller's answer through
//! the API (no fixed sleeps), and fails naming the step that did not happen.

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Pod};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimTemplate};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

const NS: &str = "demo";
/// How long a step may take before the demo gives up on it.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(100);
const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("demo: {what}: not seen within {STEP_TIMEOUT:?}")]
    Timeout { what: String },
    #[error("demo: {what}: {source}")]
    Api {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("demo: {0}")]
    Unexpected(String),
}

fn step(message: &str) {
    tracing::info!(demo = true, "demo: {message}");
}

fn api(what: &str) -> impl FnOnce(kube::Error) -> DemoError + '_ {
    move |source| DemoError::Api {
        what: what.to_string(),
        source,
    }
}

/// Polls `seen` until it returns `Some`, logs `what` as seen, and returns the value.
async fn until<T, F, Fut>(what: &str, mut seen: F) -> Result<T, DemoError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, kube::Error>>,
{
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        if let Some(value) = seen().await.map_err(api(what))? {
            step(&format!("  seen: {what}"));
            return Ok(value);
        }
        if Instant::now() > deadline {
            return Err(DemoError::Timeout {
                what: what.to_string(),
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("the demo's literal objects are valid")
}

/// Creates the namespace and the ResourceClaimTemplate `demo/gpu`; call it
/// before the controllers start.
pub async fn prepare(client: &Client) -> Result<(), DemoError> {
    let pp = PostParams::default();
    step("creating namespace demo and ResourceClaimTemplate demo/gpu before the controllers start");
    Api::<Namespace>::all(client.clone())
        .create(&pp, &object(json!({"metadata": {"name": NS}})))
        .await
        .map_err(api("create namespace demo"))?;
    Api::<ResourceClaimTemplate>::namespaced(client.clone(), NS)
        .create(&pp, &object(json!({
            "metadata": {"name": "gpu", "labels": {"team": "ml"}},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
        })))
        .await
        .map_err(api("create ResourceClaimTemplate demo/gpu"))?;
    Ok(())
}

pub async fn run(client: Client) -> Result<(), DemoError> {
    let pp = PostParams::default();
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let claims: Api<ResourceClaim> = Api::namespaced(client.clone(), NS);

    step("pvc-protection: creating PVC demo/data and pod demo/web (on node-a) that mounts it");
    pvcs.create(&pp, &object(json!({
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    })))
    .await
    .map_err(api("create PVC demo/data"))?;
    pods.create(
        &pp,
        &object(json!({
            "metadata": {"name": "web"},
            "spec": {"nodeName": "node-a", "containers": [{"name": "web", "image": "nginx"}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}
        })),
    )
    .await
    .map_err(api("create pod demo/web"))?;
    until(
        "PVC demo/data carries the pvc-protection finalizer",
        || async {
            let pvc = pvcs.get("data").await?;
            Ok(has_finalizer(&pvc).then_some(()))
        },
    )
    .await?;

    step("resource-claim: creating pod demo/trainer that claims a GPU from template demo/gpu");
    pods.create(
        &pp,
        &object(json!({
            "metadata": {"name": "trainer"},
            "spec": {"containers": [{"name": "train", "image": "trainer"}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}
        })),
    )
    .await
    .map_err(api("create pod demo/trainer"))?;
    let claim = until(
        "a ResourceClaim generated for demo/trainer and recorded in its status",
        || async {
            let pod = pods.get("trainer").await?;
            Ok(pod
                .status
                .and_then(|s| s.resource_claim_statuses)
                .into_iter()
                .flatten()
                .find(|s| s.name == "gpu")
                .and_then(|s| s.resource_claim_name))
        },
    )
    .await?;
    step(&format!("  claim demo/{claim} belongs to demo/trainer"));

    step("ephemeral-volume: creating pod demo/scratch (on node-a) with ephemeral volume `cache`");
    pods.create(&pp, &object(json!({
        "metadata": {"name": "scratch"},
        "spec": {"nodeName": "node-a", "containers": [{"name": "work", "image": "busybox"}],
                 "volumes": [{"name": "cache", "ephemeral": {"volumeClaimTemplate": {
                     "metadata": {"labels": {"purpose": "cache"}},
                     "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]}
    })))
    .await
    .map_err(api("create pod demo/scratch"))?;
    until(
        "PVC demo/scratch-cache created, owned by pod demo/scratch",
        || async {
            let pvc = pvcs.get_opt("scratch-cache").await?;
            Ok(pvc.filter(|pvc| owned_by(pvc, "scratch")).map(|_| ()))
        },
    )
    .await?;

    step("pvc-protection: deleting PVC demo/data while demo/web uses it: the finalizer keeps it");
    pvcs.delete("data", &DeleteParams::default())
        .await
        .map_err(api("delete PVC demo/data"))?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let kept = pvcs
        .get_opt("data")
        .await
        .map_err(api("get PVC demo/data"))?;
    if !kept.as_ref().is_some_and(has_finalizer) {
        return Err(DemoError::Unexpected(
            "PVC demo/data was released while pod demo/web uses it".into(),
        ));
    }
    step("  seen: PVC demo/data still there 1 s later, deleting, with its finalizer");

    step(
        "resource-claim: pod demo/trainer finished (phase Succeeded): its generated claim goes away",
    );
    pods.patch_status(
        "trainer",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Succeeded"}})),
    )
    .await
    .map_err(api("patch status of pod demo/trainer"))?;
    until(&format!("claim demo/{claim} deleted"), || async {
        Ok(claims.get_opt(&claim).await?.is_none().then_some(()))
    })
    .await?;

    step(
        "deleting pods demo/web and demo/scratch: once the kubelet finishes them, both PVCs are released and removed",
    );
    for pod in ["web", "scratch"] {
        pods.delete(pod, &DeleteParams::default())
            .await
            .map_err(api("delete pods demo/web and demo/scratch"))?;
    }
    until("PVCs demo/data and demo/scratch-cache removed", || async {
        let left = pvcs.list(&ListParams::default()).await?;
        Ok(left.items.is_empty().then_some(()))
    })
    .await?;
    step("done; the host keeps running until Ctrl-C");
    Ok(())
}

fn has_finalizer(pvc: &PersistentVolumeClaim) -> bool {
    pvc.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == PVC_PROTECTION)
}

fn owned_by(pvc: &PersistentVolumeClaim, pod: &str) -> bool {
    pvc.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "Pod" && o.name == pod && o.controller == Some(true))
}
