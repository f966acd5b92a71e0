//! Built-in kinds beyond the ones the dedicated controllers use, through the clients the
//! generic controller and operators use: kube's discovery + `Api<DynamicObject>` (list, watch,
//! merge patch with a resourceVersion, status merge patch, delete with preconditions) and
//! `kubectl` (api-resources, apply, scale, get, status patch, delete).

use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};
use kube::runtime::watcher::{self, Event};
use rekon_apiserver::{ServerConfig, resources};
use serde_json::json;

use crate::kubectl::Kubectl;
use crate::support::*;

fn dynamic(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

async fn merge(
    api: &Api<DynamicObject>,
    name: &str,
    patch: serde_json::Value,
) -> kube::Result<DynamicObject> {
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn dynamic_clients_discover_and_write_deployments_jobs_and_pvs() {
    let t = start(ServerConfig::new().pvc_protection_admission(true)).await;
    let discovery = Discovery::new(t.client.clone()).run().await.unwrap();
    let resolve = |group: &str, version: &str, kind: &str| {
        discovery
            .resolve_gvk(&GroupVersionKind::gvk(group, version, kind))
            .unwrap_or_else(|| panic!("{group}/{version} {kind} is discovered"))
    };
    let (deployments, caps) = resolve("apps", "v1", "Deployment");
    assert_eq!(caps.scope, Scope::Namespaced);
    let subresources: Vec<&str> = caps
        .subresources
        .iter()
        .map(|(r, _)| r.plural.as_str())
        .collect();
    assert!(
        subresources.contains(&"status") && subresources.contains(&"scale"),
        "{subresources:?}"
    );
    let (jobs, caps) = resolve("batch", "v1", "Job");
    assert!(caps.subresources.iter().any(|(r, _)| r.plural == "status"));
    let (pvs, caps) = resolve("", "v1", "PersistentVolume");
    assert_eq!(caps.scope, Scope::Cluster);
    for (group, version, kind) in [
        ("autoscaling", "v2", "HorizontalPodAutoscaler"),
        ("policy", "v1", "PodDisruptionBudget"),
        ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
        ("storage.k8s.io", "v1", "StorageClass"),
        ("networking.k8s.io", "v1", "Ingress"),
    ] {
        resolve(group, version, kind);
    }

    let deploy_api: Api<DynamicObject> =
        Api::namespaced_with(t.client.clone(), "default", &deployments);
    let mut events = watcher::watcher(deploy_api.clone(), watcher::Config::default()).boxed();
    let created = deploy_api
        .create(
            &PostParams::default(),
            &dynamic(json!({
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                "spec": {"selector": {"matchLabels": {"app": "d"}},
                         "template": {"metadata": {"labels": {"app": "d"}},
                                      "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
            })),
        )
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(created.data["spec"]["replicas"], 1);
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(event) = events.next().await {
            if let Ok(Event::Apply(obj) | Event::InitApply(obj)) = event
                && obj.metadata.name.as_deref() == Some("d")
            {
                return obj;
            }
        }
        panic!("the watch ended");
    })
    .await
    .expect("the watcher sees the deployment");
    assert_eq!(seen.metadata.uid, created.metadata.uid);

    let rv = created.metadata.resource_version.clone().unwrap();
    let scaled = merge(
        &deploy_api,
        "d",
        json!({"metadata": {"resourceVersion": rv}, "spec": {"replicas": 3}}),
    )
    .await
    .unwrap();
    assert_eq!(scaled.metadata.generation, Some(2));
    // The same resourceVersion again is stale now.
    let stale = merge(
        &deploy_api,
        "d",
        json!({"metadata": {"resourceVersion": rv}, "spec": {"replicas": 4}}),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(stale, kube::Error::Api(ref s) if s.code == 409),
        "{stale:?}"
    );
    let status = deploy_api
        .patch_status(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"observedGeneration": 2, "availableReplicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["availableReplicas"], 3);
    assert_eq!(status.metadata.generation, Some(2));
    let listed = deploy_api.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);

    let job_api: Api<DynamicObject> = Api::namespaced_with(t.client.clone(), "default", &jobs);
    let job = job_api
        .create(
            &PostParams::default(),
            &dynamic(json!({
                "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                "spec": {"ttlSecondsAfterFinished": 0,
                         "template": {"spec": {"restartPolicy": "Never",
                                               "containers": [{"name": "c", "image": "busybox"}]}}}
            })),
        )
        .await
        .unwrap();
    job_api
        .patch_status(
            "j",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}}),
            ),
        )
        .await
        .unwrap();
    let wrong = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: job.metadata.uid.clone(),
            resource_version: job.metadata.resource_version.clone(),
        }),
        propagation_policy: Some(kube::api::PropagationPolicy::Foreground),
        ..DeleteParams::default()
    };
    let err = job_api.delete("j", &wrong).await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409),
        "{err:?}"
    );
    let current = job_api.get("j").await.unwrap();
    let right = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: current.metadata.uid.clone(),
            resource_version: current.metadata.resource_version.clone(),
        }),
        propagation_policy: Some(kube::api::PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    job_api.delete("j", &right).await.unwrap();
    assert!(job_api.get_opt("j").await.unwrap().is_none());

    let pv_api: Api<DynamicObject> = Api::all_with(t.client.clone(), &pvs);
    let pv = pv_api
        .create(
            &PostParams::default(),
            &dynamic(json!({
                "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                         "hostPath": {"path": "/tmp/pv1"}}
            })),
        )
        .await
        .unwrap();
    assert_eq!(
        pv.metadata.finalizers.as_deref(),
        Some(&["kubernetes.io/pv-protection".to_string()][..])
    );
    assert_eq!(pv.data["status"]["phase"], "Pending");
    pv_api
        .delete("pv1", &DeleteParams::default())
        .await
        .unwrap();
    let deleting = pv_api.get("pv1").await.unwrap();
    assert!(deleting.metadata.deletion_timestamp.is_some());
    let patch = json!({"metadata": {
        "resourceVersion": deleting.metadata.resource_version, "finalizers": null}});
    merge(&pv_api, "pv1", patch).await.unwrap();
    assert!(pv_api.get_opt("pv1").await.unwrap().is_none());
}

const MANIFEST: &str = r#"
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv1
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/pv1}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: busybox}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: once
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
"#;

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_applies_scales_and_deletes_built_in_kinds() {
    let t = start(ServerConfig::new()).await;
    let kubectl = Kubectl::new(&t);
    let store = t.server.store();

    let kinds = kubectl.run(&["api-resources", "--no-headers"]).await;
    let pv_row = kinds
        .lines()
        .find(|l| l.starts_with("persistentvolumes "))
        .expect("persistentvolumes listed");
    assert!(
        pv_row.contains(" pv ") && pv_row.contains("false"),
        "{pv_row}"
    );
    assert!(
        kinds
            .lines()
            .any(|l| l.starts_with("deployments ") && l.contains("deploy"))
    );
    assert!(
        kinds
            .lines()
            .any(|l| l.starts_with("cronjobs ") && l.contains("batch/v1"))
    );

    let file = kubectl.write("kinds.yaml", MANIFEST);
    kubectl.run(&["apply", "-f", &file]).await;
    let out = kubectl
        .run(&["scale", "deployment", "web", "--replicas=3"])
        .await;
    assert!(out.contains("scaled"), "{out}");
    let deployments = resources::by_plural("apps", "deployments").unwrap();
    let web = store.get(deployments, "default", "web").unwrap();
    assert_eq!(web["spec"]["replicas"], 3);
    assert_eq!(web["metadata"]["generation"], 2);

    kubectl
        .run(&[
            "patch",
            "job",
            "once",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"succeeded":1}}"#,
        ])
        .await;
    let names = kubectl.run(&["get", "pv,deploy,jobs", "-o", "name"]).await;
    for name in [
        "persistentvolume/pv1",
        "deployment.apps/web",
        "job.batch/once",
    ] {
        assert!(names.contains(name), "{names}");
    }
    let all = kubectl.run(&["get", "all", "-o", "name"]).await;
    assert!(
        all.contains("deployment.apps/web") && all.contains("job.batch/once"),
        "{all}"
    );

    kubectl.run(&["delete", "pv", "pv1"]).await;
    kubectl.run(&["delete", "job", "once"]).await;
    let pvs = resources::by_plural("", "persistentvolumes").unwrap();
    assert!(store.get(pvs, "", "pv1").is_err());
}
