//! Rows 15, 20 and 21: list, too-new resourceVersions, field selectors.

use std::time::Duration;

use rekon_apiserver::ServerConfig;
use serde_json::json;

use crate::support::*;

fn names(list: &serde_json::Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn row15_list_pages_and_resource_version() {
    let t = start_default().await;
    for name in ["e", "b", "d", "a", "c"] {
        t.post(CM, configmap(name)).await;
    }
    let full = t.get(CM).await;
    assert_eq!(full.rv(), t.server.store().current_resource_version());
    assert_eq!(
        names(&full.body),
        vec!["a", "b", "c", "d", "e"],
        "sorted by name"
    );
    assert_eq!(full.body["kind"], "ConfigMapList");

    let page1 = t.get(&format!("{CM}?limit=2")).await;
    assert_eq!(names(&page1.body), vec!["a", "b"]);
    let token = page1.body["metadata"]["continue"]
        .as_str()
        .unwrap()
        .to_string();
    // A change between pages is not seen: pages are consistent at the first page's version.
    t.patch(
        &format!("{CM}/c"),
        "application/merge-patch+json",
        json!({"data": {"k": "changed"}}),
    )
    .await;
    t.delete(&format!("{CM}/d"), None).await;
    let page2 = t.get(&format!("{CM}?limit=2&continue={token}")).await;
    assert_eq!(page2.code, 200);
    assert_eq!(names(&page2.body), vec!["c", "d"]);
    assert_eq!(page2.body["items"][0]["data"]["k"], "v");
    assert_eq!(
        page2.rv(),
        page1.rv(),
        "every page carries the first page's resourceVersion"
    );
    let token2 = page2.body["metadata"]["continue"]
        .as_str()
        .unwrap()
        .to_string();
    let page3 = t.get(&format!("{CM}?limit=2&continue={token2}")).await;
    assert_eq!(names(&page3.body), vec!["e"]);
    assert!(page3.body["metadata"].get("continue").is_none());

    let garbage = t.get(&format!("{CM}?limit=2&continue=garbage")).await;
    assert_eq!(
        (garbage.code, garbage.body["reason"].as_str()),
        (400, Some("BadRequest"))
    );
    t.server.store().compact();
    let expired = t.get(&format!("{CM}?limit=2&continue={token}")).await;
    assert_eq!(
        (expired.code, expired.body["reason"].as_str()),
        (410, Some("Expired"))
    );

    // Cluster-wide list, sorted by namespace then name.
    t.post(
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "aaa"}}),
    )
    .await;
    t.post("/api/v1/namespaces/aaa/configmaps", configmap("z"))
        .await;
    let all = t.get("/api/v1/configmaps").await;
    let keys: Vec<String> = all.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            format!(
                "{}/{}",
                i["metadata"]["namespace"].as_str().unwrap(),
                i["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(keys.first().map(String::as_str), Some("aaa/z"));
    assert_eq!(keys.len(), 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn row20_too_new_resource_version_is_a_timeout() {
    let t = start(ServerConfig::new().too_large_resource_version_wait(Duration::from_millis(200)))
        .await;
    let future = t.server.store().current_resource_version() + 100;
    let started = std::time::Instant::now();
    for path in [
        format!("{CM}?resourceVersion={future}"),
        format!("{CM}?watch=1&resourceVersion={future}"),
    ] {
        let reply = t.get(&path).await;
        assert_eq!(reply.code, 504, "{path}");
        assert_eq!(reply.body["reason"], "Timeout");
        assert_eq!(
            reply.body["details"]["causes"][0]["reason"],
            "ResourceVersionTooLarge"
        );
    }
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "the server waits before answering"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn row21_field_selectors() {
    let t = start_default().await;
    t.post(PODS, pod("on-1", Some("n1"))).await;
    t.post(PODS, pod("on-2", Some("n2"))).await;
    t.post(PODS, pod("pending", None)).await;
    let select = |selector: &str| {
        format!(
            "{PODS}?fieldSelector={}",
            selector.replace('=', "%3D").replace(',', "%2C")
        )
    };
    assert_eq!(
        names(&t.get(&select("spec.nodeName=n1")).await.body),
        vec!["on-1"]
    );
    assert_eq!(
        names(&t.get(&select("spec.nodeName==n1")).await.body),
        vec!["on-1"]
    );
    assert_eq!(
        names(&t.get(&select("spec.nodeName!=n1")).await.body),
        vec!["on-2", "pending"]
    );
    assert_eq!(
        names(
            &t.get(&select("spec.nodeName=,status.phase=Pending"))
                .await
                .body
        ),
        vec!["pending"]
    );
    assert_eq!(
        names(
            &t.get(&select("metadata.name=on-2,metadata.namespace=default"))
                .await
                .body
        ),
        vec!["on-2"]
    );
    assert_eq!(
        names(
            &t.get(&select(
                "spec.restartPolicy=Always,spec.schedulerName=default-scheduler"
            ))
            .await
            .body
        )
        .len(),
        3
    );

    let reply = t.get(&select("spec.foo=x")).await;
    assert_eq!(reply.code, 400);
    assert_eq!(reply.body["message"], "field label not supported: spec.foo");
    let reply = t
        .get(&format!("{CM}?fieldSelector=spec.nodeName%3Dn1"))
        .await;
    assert_eq!(reply.code, 400, "ConfigMaps have only metadata fields");

    // Label selectors, for completeness of the list path.
    let mut labelled = configmap("l");
    labelled["metadata"]["labels"] = json!({"app": "web"});
    t.post(CM, labelled).await;
    t.post(CM, configmap("u")).await;
    assert_eq!(
        names(
            &t.get(&format!("{CM}?labelSelector=app%20in%20(web,db)"))
                .await
                .body
        ),
        vec!["l"]
    );
    assert_eq!(
        names(&t.get(&format!("{CM}?labelSelector=!app")).await.body),
        vec!["u"]
    );
}
