//! The workload's API calls. They go through the same faulty server as rekon's,
//! so each is retried until its effect is certain (an answer lost after the
//! write was applied shows up as AlreadyExists or NotFound on the retry).

use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use rekon_tests::sim::{PVC_FINALIZER, pod, pvc_volume};
use serde_json::{Value, json};

use crate::plan::{NODE, Op, PodPlan, TEMPLATE};

const ATTEMPTS: usize = 60;

#[derive(Debug, thiserror::Error)]
#[error("workload step {op} failed {ATTEMPTS} times; last error: {last}")]
pub struct WorkloadError {
    op: String,
    last: kube::Error,
}

fn reason(err: &kube::Error) -> Option<(u16, &str)> {
    match err {
        kube::Error::Api(status) => Some((status.code, status.reason.as_str())),
        _ => None,
    }
}

/// Retries `call` until it succeeds or answers what `settled` accepts as done.
async fn until_settled<F, Fut>(
    op: &Op,
    settled: impl Fn(&kube::Error) -> bool,
    call: F,
) -> Result<(), WorkloadError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(), kube::Error>>,
{
    let mut last = None;
    for _ in 0..ATTEMPTS {
        match call().await {
            Ok(()) => return Ok(()),
            Err(err) if settled(&err) => return Ok(()),
            Err(err) => last = Some(err),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(WorkloadError {
        op: format!("{op:?}"),
        last: last.expect("at least one attempt"),
    })
}

fn already_exists(err: &kube::Error) -> bool {
    reason(err).is_some_and(|(code, reason)| code == 409 && reason == "AlreadyExists")
}

fn not_found(err: &kube::Error) -> bool {
    reason(err).is_some_and(|(code, _)| code == 404)
}

/// Where the workload runs.
pub struct Target {
    pub namespace: String,
    /// A real kube-apiserver: no admission adds the PVC finalizer, no kubelet finishes a
    /// graceful pod delete; the workload does both itself.
    pub real: bool,
}

pub async fn apply(client: &Client, target: &Target, op: &Op) -> Result<(), WorkloadError> {
    let ns = target.namespace.as_str();
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    match op {
        Op::CreatePvc(name) => {
            let object: PersistentVolumeClaim =
                serde_json::from_value(pvc_object(target, name)).expect("PVC object");
            until_settled(op, already_exists, || async {
                pvcs.create(&PostParams::default(), &object).await.map(drop)
            })
            .await
        }
        Op::CreatePod(plan) => {
            let object: Pod = serde_json::from_value(pod_object(ns, plan)).expect("pod object");
            until_settled(op, already_exists, || async {
                pods.create(&PostParams::default(), &object).await.map(drop)
            })
            .await
        }
        Op::FinishPod(name) => {
            let done = json!({"status": {"phase": "Succeeded"}});
            until_settled(op, not_found, || async {
                pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&done))
                    .await
                    .map(drop)
            })
            .await
        }
        Op::DeletePod(name) => {
            let params = if target.real {
                DeleteParams::default().grace_period(0)
            } else {
                DeleteParams::default()
            };
            until_settled(op, not_found, || async {
                pods.delete(name, &params).await.map(drop)
            })
            .await
        }
        Op::DeletePvc(name) => {
            until_settled(op, not_found, || async {
                pvcs.delete(name, &DeleteParams::default()).await.map(drop)
            })
            .await
        }
    }
}

fn pvc_object(target: &Target, name: &str) -> Value {
    let mut object = json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"namespace": target.namespace, "name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    });
    if target.real {
        object["metadata"]["finalizers"] = json!([PVC_FINALIZER]);
    }
    object
}

fn pod_object(ns: &str, plan: &PodPlan) -> Value {
    let node = if plan.scheduled { NODE } else { "" };
    let volumes: Vec<Value> = plan
        .pvcs
        .iter()
        .enumerate()
        .map(|(i, claim)| pvc_volume(&format!("v{i}"), claim))
        .collect();
    let mut object = pod(ns, &plan.name, node, json!(volumes));
    object["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("uid");
    object["spec"]["resourceClaims"] = plan
        .template_claims
        .iter()
        .map(|c| json!({"name": c, "resourceClaimTemplateName": TEMPLATE}))
        .chain(
            plan.shared_claims
                .iter()
                .map(|c| json!({"name": c, "resourceClaimName": c})),
        )
        .collect();
    object
}
