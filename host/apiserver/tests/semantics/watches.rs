//! Rows 16–19: watch from a resourceVersion, bookmarks, streaming lists, the in-stream 410.

use std::time::{Duration, Instant};

use rekon_apiserver::ServerConfig;
use serde_json::json;

use crate::support::*;

fn rv_of(event: &serde_json::Value) -> u64 {
    event["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn row16_watch_from_a_resource_version() {
    let t = start_default().await;
    t.post(CM, configmap("before")).await;
    let from = t.server.store().current_resource_version();

    let watcher = {
        let path = format!("{CM}?watch=1&resourceVersion={from}&timeoutSeconds=5");
        let t = &t;
        async move { t.watch(&path, 3, Duration::from_secs(5)).await }
    };
    let writer = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        t.post(CM, configmap("c")).await;
        t.patch(
            &format!("{CM}/c"),
            "application/merge-patch+json",
            json!({"data": {"k": "2"}}),
        )
        .await;
        t.delete(&format!("{CM}/c"), None).await;
    };
    let (events, _) = tokio::join!(watcher, writer);
    assert_eq!(event_types(&events), vec!["ADDED", "MODIFIED", "DELETED"]);
    let rvs: Vec<u64> = events.iter().map(rv_of).collect();
    assert!(rvs.windows(2).all(|w| w[0] < w[1]) && rvs[0] > from);
    assert_eq!(events[0]["object"]["kind"], "ConfigMap");

    // resourceVersion 0: the current state first, as synthetic ADDED events.
    let events = t
        .watch(
            &format!("{CM}?watch=1&resourceVersion=0"),
            1,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(event_types(&events), vec!["ADDED"]);
    assert_eq!(events[0]["object"]["metadata"]["name"], "before");

    // timeoutSeconds closes the stream.
    let started = Instant::now();
    let events = t
        .watch(
            &format!(
                "{CM}?watch=1&resourceVersion={}&timeoutSeconds=1",
                t.server.store().current_resource_version()
            ),
            10,
            Duration::from_secs(5),
        )
        .await;
    assert!(events.is_empty());
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );

    // Selectors apply to old and new state: leaving the selector is DELETED, entering ADDED.
    let from = t.server.store().current_resource_version();
    let mut labelled = configmap("s");
    labelled["metadata"]["labels"] = json!({"app": "web"});
    t.post(CM, labelled).await;
    t.patch(
        &format!("{CM}/s"),
        "application/merge-patch+json",
        json!({"metadata": {"labels": {"app": "db"}}}),
    )
    .await;
    t.patch(
        &format!("{CM}/s"),
        "application/merge-patch+json",
        json!({"metadata": {"labels": {"app": "web"}}}),
    )
    .await;
    t.post(CM, configmap("unlabelled")).await;
    let events = t
        .watch(
            &format!("{CM}?watch=1&resourceVersion={from}&labelSelector=app%3Dweb"),
            3,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(event_types(&events), vec!["ADDED", "DELETED", "ADDED"]);
    assert_eq!(
        events[1]["object"]["metadata"]["labels"]["app"], "web",
        "DELETED carries the last matching state"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn row17_bookmarks_only_when_allowed() {
    let t = start(ServerConfig::new().bookmark_interval(Duration::from_millis(200))).await;
    t.post(CM, configmap("c")).await;
    let now = t.server.store().current_resource_version();
    let events = t
        .watch(
            &format!(
                "{CM}?watch=1&resourceVersion={now}&allowWatchBookmarks=true&timeoutSeconds=1"
            ),
            20,
            Duration::from_secs(3),
        )
        .await;
    assert!(
        events.len() >= 3,
        "periodic bookmarks and one before the timeout: {events:?}"
    );
    for event in &events {
        assert_eq!(event["type"], "BOOKMARK");
        assert_eq!(event["object"]["kind"], "ConfigMap");
        assert_eq!(
            event["object"]["metadata"]["resourceVersion"],
            now.to_string()
        );
        assert!(event["object"].get("data").is_none());
    }
    let events = t
        .watch(
            &format!("{CM}?watch=1&resourceVersion={now}&timeoutSeconds=1"),
            20,
            Duration::from_secs(3),
        )
        .await;
    assert!(events.is_empty(), "no bookmarks unless asked: {events:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn row18_streaming_list() {
    let t = start_default().await;
    t.post(CM, configmap("a")).await;
    t.post(CM, configmap("b")).await;
    let now = t.server.store().current_resource_version();
    let path = format!(
        "{CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2"
    );
    let events = t.watch(&path, 3, Duration::from_secs(3)).await;
    assert_eq!(event_types(&events), vec!["ADDED", "ADDED", "BOOKMARK"]);
    assert_eq!(
        events[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(
        events[2]["object"]["metadata"]["resourceVersion"],
        now.to_string()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn row19_watch_from_an_expired_resource_version_gets_one_in_stream_410() {
    let t = start(ServerConfig::new().history_limit(3)).await;
    // Bootstrap writes are already out of the window, as on a used etcd.
    let events = t
        .watch(
            &format!("{CM}?watch=1&resourceVersion=1"),
            5,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(
        events.len(),
        1,
        "exactly one event, then the stream closes: {events:?}"
    );
    assert_eq!(events[0]["type"], "ERROR");
    let status = &events[0]["object"];
    assert_eq!(
        (
            status["kind"].as_str(),
            status["code"].as_i64(),
            status["reason"].as_str()
        ),
        (Some("Status"), Some(410), Some("Expired"))
    );
    let floor = t.server.store().current_resource_version();
    assert_eq!(
        status["message"],
        format!("too old resource version: 1 ({floor})")
    );

    // The bounded history: five writes push the first two out of a window of three.
    let start_rv = floor;
    for i in 0..5 {
        t.post(CM, configmap(&format!("c{i}"))).await;
    }
    let events = t
        .watch(
            &format!("{CM}?watch=1&resourceVersion={start_rv}"),
            5,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(event_types(&events), vec!["ERROR"]);
    let events = t
        .watch(
            &format!("{CM}?watch=1&resourceVersion={}", start_rv + 2),
            3,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(event_types(&events), vec!["ADDED", "ADDED", "ADDED"]);

    // Store::compact drops the rest.
    t.server.store().compact();
    let events = t
        .watch(
            &format!("{CM}?watch=1&resourceVersion={}", start_rv + 4),
            5,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(event_types(&events), vec!["ERROR"]);
}
