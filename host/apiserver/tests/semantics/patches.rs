//! Rows 3, 10, 11, 12 and 13: conditional patches, server-side apply, merge, JSON and
//! strategic merge patches.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::support::*;

const MERGE: &str = "application/merge-patch+json";
const JSON: &str = "application/json-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";

#[tokio::test(flavor = "multi_thread")]
async fn row03_patch_with_a_resource_version_is_conditional() {
    let t = start_default().await;
    let created = t.post(CM, configmap("c")).await;
    let rv = created.rv();
    t.patch(&format!("{CM}/c"), MERGE, json!({"data": {"k": "1"}}))
        .await;

    for content_type in [MERGE, STRATEGIC] {
        let stale = json!({"metadata": {"resourceVersion": rv.to_string()}, "data": {"k": "2"}});
        let reply = t.patch(&format!("{CM}/c"), content_type, stale).await;
        assert_eq!(reply.code, 409, "{content_type}");
        assert_eq!(reply.body["reason"], "Conflict");
        assert_eq!(reply.body["details"]["kind"], "configmaps");
    }
    let current = t.get(&format!("{CM}/c")).await.rv();
    let fresh = json!({"metadata": {"resourceVersion": current.to_string()}, "data": {"k": "3"}});
    let reply = t.patch(&format!("{CM}/c"), MERGE, fresh).await;
    assert_eq!(
        (reply.code, reply.body["data"]["k"].as_str()),
        (200, Some("3"))
    );
    // Without one the patch applies to the latest version.
    assert_eq!(
        t.patch(&format!("{CM}/c"), MERGE, json!({"data": {"k": "4"}}))
            .await
            .code,
        200
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn row10_server_side_apply() {
    let t = start_default().await;
    let lease = |holder: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
               "spec": {"holderIdentity": holder, "leaseDurationSeconds": 10}})
    };
    let reply = t.patch(&format!("{LEASES}/l"), APPLY, lease("a")).await;
    assert_eq!(reply.code, 422, "fieldManager is required");
    assert_eq!(
        reply.body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );

    let created = t
        .patch(&format!("{LEASES}/l?fieldManager=a"), APPLY, lease("a"))
        .await;
    assert_eq!(created.code, 201);
    let managed = &created.body["metadata"]["managedFields"][0];
    assert_eq!(
        (managed["manager"].as_str(), managed["operation"].as_str()),
        (Some("a"), Some("Apply"))
    );
    assert!(managed["fieldsV1"]["f:spec"]["f:holderIdentity"].is_object());

    let again = t
        .patch(&format!("{LEASES}/l?fieldManager=a"), APPLY, lease("a"))
        .await;
    assert_eq!(
        (again.code, again.rv()),
        (200, created.rv()),
        "same content: no write"
    );

    let conflict = t
        .patch(&format!("{LEASES}/l?fieldManager=b"), APPLY, lease("b"))
        .await;
    assert_eq!(conflict.code, 409);
    assert_eq!(conflict.body["reason"], "Conflict");
    let causes = conflict.body["details"]["causes"].as_array().unwrap();
    assert!(causes.iter().all(|c| c["reason"] == "FieldManagerConflict"));
    assert!(causes.iter().any(|c| c["field"] == ".spec.holderIdentity"));

    let forced = t
        .patch(
            &format!("{LEASES}/l?fieldManager=b&force=true"),
            APPLY,
            lease("b"),
        )
        .await;
    assert_eq!(
        (forced.code, forced.body["spec"]["holderIdentity"].as_str()),
        (200, Some("b"))
    );

    // Fields written by ordinary updates are owned too (here by the User-Agent-less client,
    // "unknown"), and an apply that changes them conflicts with that Update manager.
    t.patch(
        &format!("{LEASES}/l"),
        MERGE,
        json!({"spec": {"leaseTransitions": 3}}),
    )
    .await;
    let transitions = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
                             "spec": {"leaseTransitions": 4}});
    let conflict = t
        .patch(&format!("{LEASES}/l?fieldManager=b"), APPLY, transitions)
        .await;
    assert_eq!(conflict.code, 409);
    assert_eq!(
        conflict.body["message"],
        "Apply failed with 1 conflict: conflict with \"unknown\" using coordination.k8s.io/v1: .spec.leaseTransitions"
    );
    assert_eq!(
        conflict.body["details"]["causes"][0]["message"],
        "conflict with \"unknown\" using coordination.k8s.io/v1"
    );

    // Pod status through /status with force, as the DRA controller writes it.
    t.post(PODS, pod("p", Some("n1"))).await;
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "default");
    let status = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}]}});
    let params = PatchParams::apply("ResourceClaimController").force();
    let applied = pods
        .patch_status("p", &params, &Patch::Apply(&status))
        .await
        .unwrap();
    let statuses = applied.status.unwrap().resource_claim_statuses.unwrap();
    assert_eq!(
        statuses[0].resource_claim_name.as_deref(),
        Some("p-gpu-abcde")
    );
    assert_eq!(applied.spec.unwrap().node_name.as_deref(), Some("n1"));

    // Through the kube client, a non-forced conflict is a 409 Api error.
    let leases: Api<Lease> = Api::namespaced(t.client.clone(), "default");
    let err = leases
        .patch("l", &PatchParams::apply("c"), &Patch::Apply(lease("c")))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn row11_json_merge_patch() {
    let t = start_default().await;
    let mut body = configmap("c");
    body["metadata"]["labels"] = json!({"a": "1", "b": "2"});
    body["metadata"]["finalizers"] = json!(["example.com/x", "example.com/y"]);
    t.post(CM, body).await;
    let reply = t
        .patch(
            &format!("{CM}/c"),
            MERGE,
            json!({"metadata": {"labels": {"a": null}, "finalizers": ["example.com/z"]}}),
        )
        .await;
    assert_eq!(reply.code, 200);
    assert_eq!(reply.body["metadata"]["labels"], json!({"b": "2"}));
    assert_eq!(
        reply.body["metadata"]["finalizers"],
        json!(["example.com/z"])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn row12_json_patch_with_test() {
    let t = start_default().await;
    t.post(CM, configmap("c")).await;
    // kube-runtime's finalizer helper: test the absent list against null, then add it.
    let add = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/cleanup"]}
    ]);
    let reply = t.patch(&format!("{CM}/c"), JSON, add.clone()).await;
    assert_eq!(reply.code, 200, "{}", reply.body);
    assert_eq!(
        reply.body["metadata"]["finalizers"],
        json!(["example.com/cleanup"])
    );

    // Now the test fails: 422 Invalid (not 409).
    let reply = t.patch(&format!("{CM}/c"), JSON, add).await;
    assert_eq!(reply.code, 422);
    assert_eq!(reply.body["reason"], "Invalid");
    assert_eq!(
        reply.body["message"],
        "the server rejected our request due to an error in our request"
    );
    assert_eq!(
        reply.body["details"],
        json!({}),
        "observed on v1.20: empty details"
    );

    // Remove by index with a test of the value, as the helper does.
    let remove = json!([
        {"op": "test", "path": "/metadata/finalizers/0", "value": "example.com/cleanup"},
        {"op": "remove", "path": "/metadata/finalizers/0"}
    ]);
    let reply = t.patch(&format!("{CM}/c"), JSON, remove).await;
    assert_eq!(reply.code, 200);
    assert!(
        reply.body["metadata"].get("finalizers").is_none(),
        "empty lists are not stored"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn row13_strategic_merge_patch() {
    let t = start_default().await;
    let mut body = configmap("c");
    body["metadata"]["finalizers"] = json!(["example.com/c", "example.com/d"]);
    body["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": "1"}]);
    t.post(CM, body).await;

    // Observed on v1.20: finalizers merge, patch items first.
    let reply = t
        .patch(
            &format!("{CM}/c"),
            STRATEGIC,
            json!({"metadata": {"finalizers": ["example.com/e"]}}),
        )
        .await;
    assert_eq!(
        reply.body["metadata"]["finalizers"],
        json!(["example.com/e", "example.com/c", "example.com/d"])
    );
    let reply = t
        .patch(
            &format!("{CM}/c"),
            STRATEGIC,
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/c"]}}),
        )
        .await;
    assert_eq!(
        reply.body["metadata"]["finalizers"],
        json!(["example.com/e", "example.com/d"])
    );
    // ownerReferences merge by uid; a new entry no patch entry precedes goes first (v1.20).
    let owner = json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "b", "uid": "2"}]}});
    let reply = t.patch(&format!("{CM}/c"), STRATEGIC, owner).await;
    let uids: Vec<&str> = reply.body["metadata"]["ownerReferences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uid"].as_str().unwrap())
        .collect();
    assert_eq!(uids, vec!["2", "1"]);

    // Pod status conditions merge by type; the new condition goes first, as it has no
    // preceding patch entry (upstream `mergeSortedSlice`).
    t.post(PODS, pod("p", Some("n1"))).await;
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), "default");
    let patch = |condition: &str| json!({"status": {"conditions": [{"type": condition, "status": "True"}]}});
    pods.patch_status(
        "p",
        &PatchParams::default(),
        &Patch::Strategic(patch("Ready")),
    )
    .await
    .unwrap();
    let pod = pods
        .patch_status(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(patch("Scheduled")),
        )
        .await
        .unwrap();
    let types: Vec<String> = pod
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .map(|c| c.type_)
        .collect();
    assert_eq!(types, vec!["Scheduled", "Ready"]);

    // kube-lease-manager's release: nulls remove lease spec fields.
    let leases: Api<Lease> = Api::namespaced(t.client.clone(), "default");
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 5, "leaseTransitions": 1}});
    t.post(LEASES, lease).await;
    let release = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "spec": {"holderIdentity": null, "leaseDurationSeconds": null}});
    let params = PatchParams {
        field_manager: Some("lease-manager".into()),
        ..Default::default()
    };
    let released = leases
        .patch("l", &params, &Patch::Strategic(release))
        .await
        .unwrap();
    let spec = released.spec.unwrap();
    assert_eq!(
        (spec.holder_identity, spec.lease_transitions),
        (None, Some(1))
    );
}
