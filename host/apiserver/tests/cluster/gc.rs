//! Garbage collection of ownerReferences and namespace cleanup (row 14).

use std::time::Duration;

use rekon_apiserver::ServerConfig;
use serde_json::{Value, json};

use crate::support::*;

fn owned_by(mut obj: Value, owner: &Value, block: bool) -> Value {
    obj["metadata"]["ownerReferences"] = json!([{
        "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": block
    }]);
    obj
}

async fn gone(t: &TestServer, path: &str) -> bool {
    eventually(Duration::from_secs(5), async || {
        t.get(path).await.code == 404
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn background_deletion_removes_dependents() {
    let t = start(ServerConfig::new().garbage_collector(true)).await;
    let owner = t.post(CM, configmap("owner")).await.body;
    t.post(CM, owned_by(configmap("dep"), &owner, false)).await;
    let mut orphan = configmap("orphan");
    orphan["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "no-such-uid"}]);
    t.post(CM, orphan).await;
    assert!(
        gone(&t, &format!("{CM}/orphan")).await,
        "a dependent of a missing owner is collected"
    );
    assert_eq!(
        t.get(&format!("{CM}/dep")).await.code,
        200,
        "a dependent of a live owner stays"
    );

    t.delete(&format!("{CM}/owner"), None).await;
    assert!(gone(&t, &format!("{CM}/dep")).await);

    // The DRA case: a generated claim owned by its pod goes with the pod.
    let pod = t.post(PODS, pod("p", None)).await.body;
    let claims = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims";
    let claim = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "p-gpu-x"}, "spec": {}});
    assert_eq!(t.post(claims, owned_by(claim, &pod, true)).await.code, 201);
    t.delete(&format!("{PODS}/p"), None).await;
    assert!(gone(&t, &format!("{claims}/p-gpu-x")).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let t = start(ServerConfig::new().garbage_collector(true)).await;
    let owner = t.post(CM, configmap("owner")).await.body;
    let mut held = owned_by(configmap("held"), &owner, true);
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    t.post(CM, held).await;
    t.post(CM, owned_by(configmap("free"), &owner, false)).await;

    let reply = t
        .delete(
            &format!("{CM}/owner"),
            Some(json!({"propagationPolicy": "Foreground"})),
        )
        .await;
    assert_eq!(reply.code, 200);
    assert_eq!(
        reply.body["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert!(reply.body["metadata"]["deletionTimestamp"].is_string());
    assert!(gone(&t, &format!("{CM}/free")).await);
    assert!(
        eventually(Duration::from_secs(5), async || t
            .get(&format!("{CM}/held"))
            .await
            .body["metadata"]["deletionTimestamp"]
            .is_string())
        .await
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        t.get(&format!("{CM}/owner")).await.code,
        200,
        "the blocking dependent keeps the owner"
    );

    t.patch(
        &format!("{CM}/held"),
        "application/merge-patch+json",
        json!({"metadata": {"finalizers": null}}),
    )
    .await;
    assert!(gone(&t, &format!("{CM}/held")).await);
    assert!(gone(&t, &format!("{CM}/owner")).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn orphan_deletion_keeps_dependents_without_the_reference() {
    let t = start(ServerConfig::new().garbage_collector(true)).await;
    let owner = t.post(CM, configmap("owner")).await.body;
    t.post(CM, owned_by(configmap("dep"), &owner, true)).await;
    let reply = t
        .delete(
            &format!("{CM}/owner"),
            Some(json!({"propagationPolicy": "Orphan"})),
        )
        .await;
    assert_eq!(reply.body["metadata"]["finalizers"], json!(["orphan"]));
    assert!(gone(&t, &format!("{CM}/owner")).await);
    let dep = t.get(&format!("{CM}/dep")).await;
    assert_eq!(dep.code, 200);
    assert!(dep.body["metadata"].get("ownerReferences").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn namespace_deletion() {
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tmp"}});
    // Without a namespace controller a deleted namespace stays Terminating, as on a bare
    // kube-apiserver; creating in it is forbidden.
    let bare = start_default().await;
    bare.post("/api/v1/namespaces", namespace.clone()).await;
    let reply = bare.delete("/api/v1/namespaces/tmp", None).await;
    assert_eq!(
        (reply.code, reply.body["status"]["phase"].as_str()),
        (200, Some("Terminating"))
    );
    let reply = bare
        .post("/api/v1/namespaces/tmp/configmaps", configmap("c"))
        .await;
    assert_eq!(
        (reply.code, reply.body["reason"].as_str()),
        (403, Some("Forbidden"))
    );

    let t = start(ServerConfig::new().garbage_collector(true)).await;
    t.post("/api/v1/namespaces", namespace).await;
    t.post("/api/v1/namespaces/tmp/configmaps", configmap("c"))
        .await;
    t.post("/api/v1/namespaces/tmp/pods", pod("p", Some("n1")))
        .await;
    t.delete("/api/v1/namespaces/tmp", None).await;
    assert!(gone(&t, "/api/v1/namespaces/tmp/configmaps/c").await);
    assert!(gone(&t, "/api/v1/namespaces/tmp/pods/p").await);
    assert!(gone(&t, "/api/v1/namespaces/tmp").await);
}
