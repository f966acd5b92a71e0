//! Rows 1, 2, 7, 8, 9, 22, 24 and body validation.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use rekon_apiserver::ServerConfig;
use rekon_apiserver::names::GENERATED_ALPHABET;
use serde_json::json;

use crate::support::*;

#[tokio::test(flavor = "multi_thread")]
async fn row01_resource_version_is_one_global_increasing_integer() {
    let t = start_default().await;
    let start = t.server.store().current_resource_version();
    let cm = t.post(CM, configmap("a")).await;
    let pod = t.post(PODS, pod("p", None)).await;
    assert_eq!((cm.code, pod.code), (201, 201));
    assert!(
        cm.rv() > start && pod.rv() == cm.rv() + 1,
        "one counter for all kinds"
    );
    let mut body = cm.body.clone();
    body["data"]["k"] = json!("w");
    let updated = t.put(&format!("{CM}/a"), body).await;
    assert_eq!(updated.rv(), pod.rv() + 1);
    let deleted = t.delete(&format!("{CM}/a"), None).await;
    assert_eq!(deleted.code, 200);
    // The delete itself gets a new resourceVersion, carried by the DELETED event.
    let events = t
        .watch(
            &format!("{CM}?watch=1&resourceVersion={}", updated.rv()),
            1,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(event_types(&events), vec!["DELETED"]);
    let delete_rv: u64 = events[0]["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(delete_rv, updated.rv() + 1);
    let list = t.get(CM).await;
    assert_eq!(list.rv(), delete_rv);
}

#[tokio::test(flavor = "multi_thread")]
async fn row02_put_with_a_stale_resource_version_is_a_conflict() {
    let t = start_default().await;
    let created = t.post(CM, configmap("c")).await;
    let mut first = created.body.clone();
    first["data"]["k"] = json!("1");
    assert_eq!(t.put(&format!("{CM}/c"), first).await.code, 200);

    let mut stale = created.body.clone();
    stale["data"]["k"] = json!("2");
    let reply = t.put(&format!("{CM}/c"), stale).await;
    assert_eq!(reply.code, 409);
    assert_eq!(reply.body["reason"], "Conflict");
    assert_eq!(
        reply.body["message"],
        "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again"
    );
    assert_eq!(
        reply.body["details"],
        json!({"name": "c", "kind": "configmaps"})
    );

    // Without a resourceVersion the update is unconditional.
    let mut unconditional = configmap("c");
    unconditional["data"]["k"] = json!("3");
    let reply = t.put(&format!("{CM}/c"), unconditional).await;
    assert_eq!(
        (reply.code, reply.body["data"]["k"].as_str()),
        (200, Some("3"))
    );

    // Through the kube client the conflict is kube::Error::Api with code 409.
    let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
    let mut old: ConfigMap = serde_json::from_value(created.body).unwrap();
    old.data = Some([("k".to_string(), "4".to_string())].into());
    match api.replace("c", &PostParams::default(), &old).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"))
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn row07_generate_name_uses_the_alphabet_truncates_and_retries() {
    let t = start(ServerConfig::new().seed(7)).await;
    let mut body = configmap("");
    body["metadata"] = json!({"generateName": "gen-"});
    let first = t.post(CM, body.clone()).await;
    assert_eq!(first.code, 201);
    let name = first.body["metadata"]["name"].as_str().unwrap().to_string();
    assert_eq!(name.len(), 9);
    assert!(name.starts_with("gen-"));
    assert!(
        name[4..].bytes().all(|b| GENERATED_ALPHABET.contains(&b)),
        "{name}"
    );

    let mut long = configmap("");
    long["metadata"] = json!({"generateName": format!("{}-", "x".repeat(70))});
    let reply = t.post(CM, long).await;
    let long_name = reply.body["metadata"]["name"].as_str().unwrap();
    assert_eq!((reply.code, long_name.len()), (201, 63));
    assert!(long_name.starts_with(&"x".repeat(58)));

    // An explicit name wins over generateName.
    let mut both = configmap("explicit");
    both["metadata"]["generateName"] = json!("gen-");
    assert_eq!(t.post(CM, both).await.body["metadata"]["name"], "explicit");

    // Newer behaviour (KEP-4420, GA in 1.32; v1.20 answered 500 ServerTimeout): a collision on
    // a generated name is retried. A second server with the same seed generates the same first
    // name; it is taken, so the server must pick another.
    let again = start(ServerConfig::new().seed(7)).await;
    again.server.store().load_objects(vec![json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default", "uid": "fixed"}
    })]).unwrap();
    let retried = again.post(CM, body).await;
    assert_eq!(retried.code, 201);
    let retried_name = retried.body["metadata"]["name"].as_str().unwrap();
    assert!(retried_name.starts_with("gen-") && retried_name != name);

    // An explicit name that exists is AlreadyExists.
    let reply = t.post(CM, configmap("explicit")).await;
    assert_eq!(reply.code, 409);
    assert_eq!(reply.body["reason"], "AlreadyExists");
    assert_eq!(
        reply.body["message"],
        "configmaps \"explicit\" already exists"
    );
    assert_eq!(
        reply.body["details"],
        json!({"name": "explicit", "kind": "configmaps"})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn row08_create_sets_system_fields() {
    let t = start_default().await;
    let mut body = configmap("s");
    body["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
    body["metadata"]["uid"] = json!("client-uid");
    body["metadata"]["generation"] = json!(5);
    let reply = t.post(CM, body).await;
    assert_eq!(reply.code, 201);
    let meta = &reply.body["metadata"];
    assert!(
        meta["uid"]
            .as_str()
            .is_some_and(|u| u.len() == 36 && u != "client-uid")
    );
    assert!(meta["creationTimestamp"].as_str().is_some());
    assert!(meta["resourceVersion"].as_str().is_some());
    assert!(meta.get("deletionTimestamp").is_none());
    // v1.20: ConfigMaps have no server-managed generation; a client value is kept as sent.
    assert_eq!(meta["generation"], 5);

    // Kinds that manage generation start at 1.
    let claim = t
        .post(
            "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "rc", "generation": 9}, "spec": {}}),
        )
        .await;
    assert_eq!(
        (claim.code, claim.body["metadata"]["generation"].as_i64()),
        (201, Some(1))
    );

    // A pod's status is reset on create.
    let mut running = pod("p", Some("n1"));
    running["status"] = json!({"phase": "Running"});
    let created = t.post(PODS, running).await;
    assert_eq!(created.body["status"]["phase"], "Pending");

    // v1.20 etcd3 store: a create body with a resourceVersion is a 500 without a reason.
    let mut with_rv = configmap("rv");
    with_rv["metadata"]["resourceVersion"] = json!("5");
    let reply = t.post(CM, with_rv).await;
    assert_eq!(reply.code, 500);
    assert_eq!(
        reply.body["message"],
        "resourceVersion should not be set on objects to be created"
    );
    assert!(reply.body.get("reason").is_none());
    assert_eq!(reply.body["status"], "Failure");
}

#[tokio::test(flavor = "multi_thread")]
async fn row09_status_subresource_split() {
    let t = start_default().await;
    let created = t.post(PODS, pod("p", Some("n1"))).await;

    // Main resource: status changes are ignored.
    let mut main = created.body.clone();
    main["status"]["phase"] = json!("Running");
    main["metadata"]["labels"] = json!({"a": "1"});
    let reply = t.put(&format!("{PODS}/p"), main).await;
    assert_eq!(reply.code, 200);
    assert_eq!(reply.body["status"]["phase"], "Pending");
    assert_eq!(reply.body["metadata"]["labels"]["a"], "1");

    // Status: spec reset, labels kept (observed on v1.20 for pods and PVCs), status written.
    let mut status = reply.body.clone();
    status["status"]["phase"] = json!("Running");
    status["spec"]["nodeName"] = json!("other");
    status["metadata"]["labels"] = json!({"a": "2"});
    let reply = t.put(&format!("{PODS}/p/status"), status).await;
    assert_eq!(reply.code, 200);
    assert_eq!(reply.body["status"]["phase"], "Running");
    assert_eq!(reply.body["spec"]["nodeName"], "n1");
    assert_eq!(reply.body["metadata"]["labels"]["a"], "2");

    // ResourceClaim: status only, and status writes never bump generation.
    let claims = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims";
    let claim = t
        .post(claims, json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "rc"}, "spec": {}}))
        .await;
    let mut body = claim.body.clone();
    body["metadata"]["labels"] = json!({"x": "y"});
    body["status"] = json!({"reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]});
    let reply = t.put(&format!("{claims}/rc/status"), body).await;
    assert_eq!(reply.code, 200);
    assert_eq!(reply.body["status"]["reservedFor"][0]["uid"], "u1");
    assert!(reply.body["metadata"].get("labels").is_none());
    assert_eq!(reply.body["metadata"]["generation"], 1);
    let mut spec_change = reply.body.clone();
    spec_change["spec"] =
        json!({"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}});
    let reply = t.put(&format!("{claims}/rc"), spec_change).await;
    assert_eq!(reply.code, 200, "{}", reply.body);
    assert_eq!(reply.body["metadata"]["generation"], 2);
    assert_eq!(reply.body["status"]["reservedFor"][0]["uid"], "u1");
}

#[tokio::test(flavor = "multi_thread")]
async fn row22_create_in_a_missing_namespace_is_not_found() {
    let t = start_default().await;
    let reply = t
        .post("/api/v1/namespaces/nope/configmaps", configmap("c"))
        .await;
    assert_eq!(reply.code, 404);
    assert_eq!(reply.body["message"], "namespaces \"nope\" not found");
    assert_eq!(
        reply.body["details"],
        json!({"name": "nope", "kind": "namespaces"})
    );
    assert_eq!(t.get("/api/v1/namespaces/default").await.code, 200);
    assert_eq!(t.get("/api/v1/namespaces/kube-system").await.code, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn row24_errors_are_status_objects() {
    let t = start_default().await;
    let reply = t.get(&format!("{CM}/missing")).await;
    assert_eq!(reply.code, 404);
    assert_eq!(
        reply.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "configmaps \"missing\" not found", "reason": "NotFound",
               "details": {"name": "missing", "kind": "configmaps"}, "code": 404})
    );
    let reply = t
        .get("/apis/coordination.k8s.io/v1/namespaces/default/leases/l")
        .await;
    assert_eq!(reply.body["details"]["group"], "coordination.k8s.io");
    assert_eq!(
        reply.body["message"],
        "leases.coordination.k8s.io \"l\" not found"
    );

    let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
    match api.get("missing").await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_bodies_are_rejected_naming_the_field() {
    let t = start_default().await;
    let reply = t.post(PODS, json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": "x"}})).await;
    assert_eq!(
        (reply.code, reply.body["reason"].as_str()),
        (400, Some("BadRequest"))
    );
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap()
            .contains("spec.containers"),
        "{}",
        reply.body
    );

    let reply = t.post(CM, configmap("Bad_Name")).await;
    assert_eq!(reply.code, 422);
    assert_eq!(reply.body["reason"], "Invalid");
    assert_eq!(reply.body["details"]["kind"], "ConfigMap");
    assert_eq!(reply.body["details"]["causes"][0]["field"], "metadata.name");
    assert_eq!(
        reply.body["details"]["causes"][0]["reason"],
        "FieldValueInvalid"
    );
    assert!(reply.body["message"].as_str().unwrap().starts_with(
        "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\""
    ));

    let reply = t.post(PODS, json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}})).await;
    assert_eq!(reply.code, 422);
    assert_eq!(
        reply.body["details"]["causes"][0]["field"],
        "spec.containers"
    );

    let reply = t.post(CM, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "other"}})).await;
    assert_eq!(reply.code, 400);
    assert_eq!(
        reply.body["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );

    // Unknown fields are pruned, as the real server does for built-in kinds.
    let mut extra = configmap("extra");
    extra["bogus"] = json!(1);
    let reply = t.post(CM, extra).await;
    assert_eq!(reply.code, 201);
    assert!(reply.body.get("bogus").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn seeding_keeps_state_and_snapshot_is_sorted() {
    let t = start_default().await;
    let yaml = r#"
apiVersion: v1
kind: Pod
metadata:
  name: b-pod
  namespace: seeded
  uid: 11111111-1111-4111-8111-111111111111
  finalizers: [example.com/keep]
  deletionTimestamp: "2024-01-01T00:00:00Z"
  deletionGracePeriodSeconds: 0
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: u-1}]
spec:
  nodeName: n1
  containers: [{name: c, image: i:1}]
status:
  phase: Running
---
kind: List
apiVersion: v1
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: z, namespace: seeded}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: seeded}}
"#;
    let store = t.server.store();
    let before = store.current_resource_version();
    store
        .load_objects(rekon_apiserver::load_yaml_documents(yaml).unwrap())
        .unwrap();
    let pod = t.get("/api/v1/namespaces/seeded/pods/b-pod").await.body;
    assert_eq!(
        pod["metadata"]["uid"],
        "11111111-1111-4111-8111-111111111111"
    );
    assert_eq!(pod["metadata"]["finalizers"], json!(["example.com/keep"]));
    assert_eq!(pod["metadata"]["deletionTimestamp"], "2024-01-01T00:00:00Z");
    assert_eq!(pod["metadata"]["ownerReferences"][0]["uid"], "u-1");
    assert_eq!(pod["status"]["phase"], "Running");
    assert!(
        pod["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > before
    );

    let keys: Vec<String> = store
        .snapshot()
        .iter()
        .filter(|o| o["metadata"]["namespace"] == "seeded" || o["metadata"]["name"] == "seeded")
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            "ConfigMap/a",
            "ConfigMap/z",
            "Namespace/seeded",
            "Pod/b-pod"
        ]
    );

    let err = store
        .load_objects(vec![
            json!({"apiVersion": "v1", "kind": "ComponentStatus", "metadata": {"name": "s"}}),
        ])
        .unwrap_err();
    assert!(err.to_string().contains("v1/ComponentStatus"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn put_naming_another_object_is_a_bad_request_even_when_missing() {
    let t = start_default().await;
    assert_eq!(t.post(CM, configmap("one")).await.code, 201);
    for url_name in ["one", "absent"] {
        let reply = t.put(&format!("{CM}/{url_name}"), configmap("two")).await;
        assert_eq!(
            (reply.code, reply.body["reason"].as_str()),
            (400, Some("BadRequest")),
            "PUT {url_name}: {}",
            reply.body
        );
        assert_eq!(
            reply.body["message"],
            format!("the name of the object (two) does not match the name on the URL ({url_name})")
        );
    }
}

const CORE_EVENTS: &str = "/api/v1/namespaces/default/events";
const EVENTS_V1: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

#[tokio::test(flavor = "multi_thread")]
async fn events_v1_requires_an_event_time() {
    let t = start_default().await;
    let reply = t
        .post(
            EVENTS_V1,
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
                   "reportingController": "rekon", "reportingInstance": "h", "action": "A",
                   "reason": "R", "type": "Normal", "regarding": {"kind": "Pod", "name": "p"}}),
        )
        .await;
    assert_eq!(
        (reply.code, reply.body["reason"].as_str()),
        (422, Some("Invalid"))
    );
    assert_eq!(
        reply.body["message"],
        "Event.events.k8s.io \"e\" is invalid: eventTime: Required value"
    );
    // core/v1 Events may leave it out.
    let core = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "c"},
                      "involvedObject": {"kind": "Pod", "name": "p"}, "message": "m"});
    assert_eq!(t.post(CORE_EVENTS, core).await.code, 201);
}

#[tokio::test(flavor = "multi_thread")]
async fn both_event_apis_share_storage() {
    let t = start_default().await;
    let created = t
        .post(
            EVENTS_V1,
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "ev2"},
                   "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "rekon.dev/x",
                   "reportingInstance": "host-1", "action": "Remove", "reason": "Removed",
                   "type": "Normal", "note": "gone", "regarding": {"kind": "Pod", "name": "p1"}}),
        )
        .await;
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(created.body["note"], "gone");

    let core = t.get(&format!("{CORE_EVENTS}/ev2")).await;
    assert_eq!(core.code, 200, "{}", core.body);
    assert_eq!(core.body["apiVersion"], "v1");
    assert_eq!(core.body["message"], "gone");
    assert_eq!(core.body["involvedObject"]["name"], "p1");
    assert_eq!(core.body["reportingComponent"], "rekon.dev/x");
    assert_eq!(core.body["reportingInstance"], "host-1");
    assert!(core.body.get("note").is_none());
    assert_eq!(core.rv(), created.rv());

    let core_created = t
        .post(
            CORE_EVENTS,
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "ev1"},
                   "involvedObject": {"kind": "Pod", "name": "p0"}, "message": "legacy",
                   "source": {"component": "rekon"}, "count": 3}),
        )
        .await;
    assert_eq!(core_created.code, 201);
    let as_v1 = t.get(&format!("{EVENTS_V1}/ev1")).await;
    assert_eq!(as_v1.code, 200, "{}", as_v1.body);
    assert_eq!(as_v1.body["apiVersion"], "events.k8s.io/v1");
    assert_eq!(as_v1.body["note"], "legacy");
    assert_eq!(as_v1.body["regarding"]["name"], "p0");
    assert_eq!(as_v1.body["deprecatedSource"]["component"], "rekon");
    assert_eq!(as_v1.body["deprecatedCount"], 3);

    let list = t.get(EVENTS_V1).await;
    let names: Vec<&str> = list.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ev1", "ev2"]);
    assert_eq!(list.body["items"][0]["note"], "legacy");

    // A write through one API is seen by a watch on the other, in the watcher's shape.
    let from = created.rv() - 1;
    let events = t
        .watch(
            &format!("{CORE_EVENTS}?watch=true&resourceVersion={from}"),
            2,
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(event_types(&events), ["ADDED", "ADDED"]);
    assert_eq!(events[0]["object"]["message"], "gone");
    assert_eq!(events[0]["object"]["apiVersion"], "v1");

    let deleted = t.delete(&format!("{CORE_EVENTS}/ev2"), None).await;
    assert_eq!(deleted.code, 200);
    assert_eq!(t.get(&format!("{EVENTS_V1}/ev2")).await.code, 404);
}
