//! Rows 4, 5 and 6: delete preconditions, finalizers and graceful pod deletion.

use std::time::Duration;

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::api::{Api, DeleteParams, Preconditions};
use rekon_apiserver::meta::parse_time;
use serde_json::json;

use crate::support::*;

fn with_finalizers(mut obj: serde_json::Value, finalizers: &[&str]) -> serde_json::Value {
    obj["metadata"]["finalizers"] = json!(finalizers);
    obj
}

#[tokio::test(flavor = "multi_thread")]
async fn row04_delete_preconditions() {
    let t = start_default().await;
    let created = t
        .post(PVCS, with_finalizers(pvc("p1"), &["example.com/f"]))
        .await;
    let uid = created.body["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let rv = created.rv();

    // 404 comes before any precondition check.
    let reply = t
        .delete(
            &format!("{PVCS}/missing"),
            Some(json!({"preconditions": {"uid": "x"}})),
        )
        .await;
    assert_eq!(reply.code, 404);

    let reply = t
        .delete(
            &format!("{PVCS}/p1"),
            Some(json!({"preconditions": {"uid": "wrong"}})),
        )
        .await;
    assert_eq!(reply.code, 409);
    assert_eq!(reply.body["reason"], "Conflict");
    assert_eq!(
        reply.body["message"],
        format!(
            "Operation cannot be fulfilled on PersistentVolumeClaim \"p1\": the UID in the precondition (wrong) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
        )
    );
    assert_eq!(
        reply.body["details"],
        json!({"name": "p1", "kind": "PersistentVolumeClaim"})
    );

    let reply = t
        .delete(
            &format!("{PVCS}/p1"),
            Some(json!({"preconditions": {"resourceVersion": "1"}})),
        )
        .await;
    assert_eq!(reply.code, 409);
    assert_eq!(
        reply.body["message"],
        format!(
            "Operation cannot be fulfilled on PersistentVolumeClaim \"p1\": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({rv}). The object might have been modified"
        )
    );

    // Matching preconditions through the kube client, as the host deletes.
    let api: Api<PersistentVolumeClaim> = Api::namespaced(t.client.clone(), "default");
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.clone()),
            resource_version: Some(rv.to_string()),
        }),
        ..Default::default()
    };
    let deleting = api
        .delete("p1", &params)
        .await
        .unwrap()
        .left()
        .expect("a PVC with finalizers is returned");
    assert!(deleting.metadata.deletion_timestamp.is_some());

    // Preconditions are still checked on an object already being deleted.
    let reply = t
        .delete(
            &format!("{PVCS}/p1"),
            Some(json!({"preconditions": {"uid": "wrong"}})),
        )
        .await;
    assert_eq!(reply.code, 409);
}

#[tokio::test(flavor = "multi_thread")]
async fn row05_finalizers_make_delete_two_phase() {
    let t = start_default().await;
    let created = t
        .post(PVCS, with_finalizers(pvc("p"), &["example.com/f"]))
        .await;
    let start = created.rv();

    let first = t.delete(&format!("{PVCS}/p"), None).await;
    assert_eq!(first.code, 200);
    assert_eq!(first.body["kind"], "PersistentVolumeClaim");
    let ts = first.body["metadata"]["deletionTimestamp"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(first.body["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(first.rv(), start + 1);

    // A second DELETE is a no-op: same timestamp, no write.
    let second = t.delete(&format!("{PVCS}/p"), None).await;
    assert_eq!(second.code, 200);
    assert_eq!(second.body["metadata"]["deletionTimestamp"], ts.as_str());
    assert_eq!(second.rv(), first.rv());

    // No new finalizers on a deleting object.
    let reply = t
        .patch(
            &format!("{PVCS}/p"),
            "application/merge-patch+json",
            json!({"metadata": {"finalizers": ["example.com/f", "example.com/b"]}}),
        )
        .await;
    assert_eq!(reply.code, 422);
    assert_eq!(reply.body["reason"], "Invalid");
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap()
            .contains("no new finalizers can be added if the object is being deleted")
    );
    assert_eq!(
        reply.body["details"]["causes"][0]["field"],
        "metadata.finalizers"
    );

    // Removing the last finalizer deletes: the response is the object without finalizers and
    // the pre-delete resourceVersion; DELETED carries the stored state with a new one.
    let reply = t
        .patch(
            &format!("{PVCS}/p"),
            "application/json-patch+json",
            json!([{"op": "remove", "path": "/metadata/finalizers"}]),
        )
        .await;
    assert_eq!(reply.code, 200);
    assert!(reply.body["metadata"].get("finalizers").is_none());
    assert_eq!(reply.rv(), first.rv());
    assert_eq!(t.get(&format!("{PVCS}/p")).await.code, 404);
    let events = t
        .watch(
            &format!("{PVCS}?watch=1&resourceVersion={start}"),
            2,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(event_types(&events), vec!["MODIFIED", "DELETED"]);
    assert_eq!(
        events[1]["object"]["metadata"]["finalizers"],
        json!(["example.com/f"])
    );
    assert_eq!(
        events[1]["object"]["metadata"]["resourceVersion"],
        (first.rv() + 1).to_string()
    );

    // Generation is bumped by the mark when the kind tracks it.
    let claims = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims";
    let claim = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "rc", "finalizers": ["resource.kubernetes.io/delete-protection"]}, "spec": {}});
    assert_eq!(
        t.post(claims, claim).await.body["metadata"]["generation"],
        1
    );
    let marked = t.delete(&format!("{claims}/rc"), None).await;
    assert_eq!(marked.body["metadata"]["generation"], 2);

    // Without finalizers a ConfigMap goes at once and the answer is a Success Status.
    let cm = t.post(CM, configmap("c")).await;
    let reply = t.delete(&format!("{CM}/c"), None).await;
    assert_eq!(reply.code, 200);
    assert_eq!(
        reply.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
               "details": {"name": "c", "kind": "configmaps", "uid": cm.body["metadata"]["uid"]}})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn row06_graceful_pod_deletion() {
    let t = start_default().await;
    let created = t.post(PODS, pod("sched", Some("node-1"))).await;
    let start = created.rv();

    let before = chrono::Utc::now();
    let first = t.delete(&format!("{PODS}/sched"), None).await;
    assert_eq!(first.code, 200);
    assert_eq!(first.body["metadata"]["deletionGracePeriodSeconds"], 30);
    let ts = parse_time(
        first.body["metadata"]["deletionTimestamp"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let offset = (ts - before).num_seconds();
    assert!(
        (29..=31).contains(&offset),
        "deletionTimestamp is now + 30s, got +{offset}s"
    );
    assert_eq!(
        t.get(&format!("{PODS}/sched")).await.code,
        200,
        "without a kubelet the pod stays"
    );

    // The same or a longer grace is pending: no write.
    let again = t
        .delete(
            &format!("{PODS}/sched"),
            Some(json!({"gracePeriodSeconds": 60})),
        )
        .await;
    assert_eq!(again.rv(), first.rv());

    // A shorter grace moves the deadline earlier, counted from the first delete.
    let shorter = t
        .delete(
            &format!("{PODS}/sched"),
            Some(json!({"gracePeriodSeconds": 10})),
        )
        .await;
    assert_eq!(shorter.body["metadata"]["deletionGracePeriodSeconds"], 10);
    let moved = parse_time(
        shorter.body["metadata"]["deletionTimestamp"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!((ts - moved).num_seconds(), 20);

    // Grace 0 (what the kubelet sends) removes it: MODIFIED then DELETED.
    let last = t
        .delete(
            &format!("{PODS}/sched"),
            Some(json!({"gracePeriodSeconds": 0})),
        )
        .await;
    assert_eq!((last.code, last.body["kind"].as_str()), (200, Some("Pod")));
    assert_eq!(t.get(&format!("{PODS}/sched")).await.code, 404);
    let events = t
        .watch(
            &format!("{PODS}?watch=1&resourceVersion={start}"),
            4,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(
        event_types(&events),
        vec!["MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]
    );
    assert_eq!(
        events[2]["object"]["metadata"]["deletionGracePeriodSeconds"],
        0
    );

    // Unscheduled pods are deleted at once: MODIFIED (grace 0) then DELETED; the reply is the Pod.
    let unscheduled = t.post(PODS, pod("pending", None)).await;
    let reply = t.delete(&format!("{PODS}/pending"), None).await;
    assert_eq!(
        (reply.code, reply.body["kind"].as_str()),
        (200, Some("Pod"))
    );
    assert_eq!(reply.body["metadata"]["deletionGracePeriodSeconds"], 0);
    let events = t
        .watch(
            &format!("{PODS}?watch=1&resourceVersion={}", unscheduled.rv()),
            2,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(event_types(&events), vec!["MODIFIED", "DELETED"]);

    // Terminal pods too.
    let done = t.post(PODS, pod("done", Some("node-1"))).await;
    let mut status = done.body.clone();
    status["status"]["phase"] = json!("Succeeded");
    assert_eq!(
        t.put(&format!("{PODS}/done/status"), status).await.code,
        200
    );
    t.delete(&format!("{PODS}/done"), None).await;
    assert_eq!(t.get(&format!("{PODS}/done")).await.code, 404);

    // terminationGracePeriodSeconds is the default grace.
    let mut short = pod("short", Some("node-1"));
    short["spec"]["terminationGracePeriodSeconds"] = json!(5);
    t.post(PODS, short).await;
    let reply = t.delete(&format!("{PODS}/short"), None).await;
    assert_eq!(reply.body["metadata"]["deletionGracePeriodSeconds"], 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_propagation_policy_is_an_invalid_delete_options() {
    let t = start_default().await;
    let cm = "/api/v1/namespaces/default/configmaps";
    assert_eq!(t.post(cm, configmap("fg")).await.code, 201);
    let reply = t
        .delete(
            &format!("{cm}/fg"),
            Some(json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Sideways"})),
        )
        .await;
    assert_eq!(reply.code, 422, "{}", reply.body);
    assert_eq!(reply.body["reason"], "Invalid");
    assert_eq!(
        reply.body["message"],
        r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil""#
    );
    assert_eq!(
        reply.body["details"],
        json!({"group": "meta.k8s.io", "kind": "DeleteOptions", "causes": [{
            "reason": "FieldValueNotSupported", "field": "propagationPolicy",
            "message": "Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""}]})
    );
    assert_eq!(
        t.get(&format!("{cm}/fg")).await.code,
        200,
        "nothing deleted"
    );
}
