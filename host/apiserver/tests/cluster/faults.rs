//! Fault injection: one test per kind of fault.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use rekon_apiserver::{FaultConfig, RequestFault, ServerConfig, Verb, WatchFault};
use serde_json::json;

use crate::support::*;

fn with_faults(faults: FaultConfig) -> ServerConfig {
    ServerConfig::new().seed(3).faults(faults)
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_conflicts() {
    let faults = FaultConfig::new().request(
        RequestFault::new()
            .verbs([Verb::Patch, Verb::Update])
            .resources(["configmaps"])
            .conflict(1.0),
    );
    let t = start(with_faults(faults)).await;
    assert_eq!(
        t.post(CM, configmap("c")).await.code,
        201,
        "creates are not affected"
    );
    let reply = t
        .patch(
            &format!("{CM}/c"),
            "application/merge-patch+json",
            json!({"data": {"k": "2"}}),
        )
        .await;
    assert_eq!(
        (reply.code, reply.body["reason"].as_str()),
        (409, Some("Conflict"))
    );
    assert_eq!(
        t.get(&format!("{CM}/c")).await.body["data"]["k"],
        "v",
        "nothing was written"
    );
    assert_eq!(t.post(PVCS, pvc("p")).await.code, 201);
    let reply = t
        .patch(
            &format!("{PVCS}/p"),
            "application/merge-patch+json",
            json!({"metadata": {"labels": {"a": "b"}}}),
        )
        .await;
    assert_eq!(reply.code, 200, "other resources are not affected");
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_server_errors_follow_the_fraction_and_seed() {
    let faults =
        FaultConfig::new().request(RequestFault::new().verbs([Verb::Create]).server_error(0.5));
    let run = async || {
        let t = start(with_faults(faults.clone())).await;
        let mut codes = Vec::new();
        for i in 0..20 {
            codes.push(t.post(CM, configmap(&format!("c{i}"))).await.code);
        }
        codes
    };
    let first = run().await;
    assert!(first.contains(&500) && first.contains(&201), "{first:?}");
    assert_eq!(first, run().await, "the same seed injects the same faults");
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_throttling_carries_retry_after_and_kube_retries() {
    let always = FaultConfig::new().request(
        RequestFault::new()
            .verbs([Verb::Get])
            .too_many_requests(1.0, 1),
    );
    let t = start(with_faults(always)).await;
    let reply = t.get(&format!("{CM}/x")).await;
    assert_eq!((reply.code, reply.retry_after.as_deref()), (429, Some("1")));
    assert_eq!(reply.body["reason"], "TooManyRequests");

    // kube's default retry policy honours it: with some requests throttled, a get succeeds.
    let sometimes = FaultConfig::new().request(
        RequestFault::new()
            .verbs([Verb::Get])
            .too_many_requests(0.5, 0),
    );
    let t = start(with_faults(sometimes)).await;
    t.post(CM, configmap("c")).await;
    let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
    for _ in 0..5 {
        assert!(api.get("c").await.is_ok());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn injected_latency() {
    let faults = FaultConfig::new().request(
        RequestFault::new()
            .verbs([Verb::List])
            .latency(Duration::from_millis(600)),
    );
    let t = start(with_faults(faults)).await;
    let started = Instant::now();
    assert_eq!(t.get(CM).await.code, 200);
    assert!(started.elapsed() >= Duration::from_millis(600));
    let started = Instant::now();
    t.get(&format!("{CM}/x")).await;
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "gets are not slowed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn dropped_watch_events() {
    let faults =
        FaultConfig::new().watch(WatchFault::new().resources(["configmaps"]).drop_events(0.5));
    let t = start(with_faults(faults)).await;
    let from = t.server.store().current_resource_version();
    for i in 0..40 {
        t.post(CM, configmap(&format!("c{i}"))).await;
    }
    let events = t
        .watch(
            &format!("{CM}?watch=1&resourceVersion={from}&timeoutSeconds=1"),
            40,
            Duration::from_secs(3),
        )
        .await;
    assert!(
        events.len() > 5 && events.len() < 35,
        "about half of 40 events arrive, got {}",
        events.len()
    );
    let rvs: Vec<u64> = events
        .iter()
        .map(|e| {
            e["object"]["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(
        rvs.windows(2).all(|w| w[0] < w[1]),
        "what arrives is still in order"
    );
    // Pods are not affected.
    let from = t.server.store().current_resource_version();
    for i in 0..5 {
        t.post(PODS, pod(&format!("p{i}"), None)).await;
    }
    let events = t
        .watch(
            &format!("{PODS}?watch=1&resourceVersion={from}"),
            5,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(events.len(), 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_that_dropped_events_ends_with_410_when_faults_stop() {
    // Every configmap event is dropped: the client cannot tell it lost anything,
    // so only a new list can repair its cache.
    let faults =
        FaultConfig::new().watch(WatchFault::new().resources(["configmaps"]).drop_events(1.0));
    let t = start(with_faults(faults)).await;
    let from = t.server.store().current_resource_version();
    t.post(CM, configmap("lost")).await;
    let path = format!("{CM}?watch=1&resourceVersion={from}&timeoutSeconds=30");
    let watching = t.watch(&path, 2, Duration::from_secs(10));
    let stopping = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        t.server.stop_faults();
    };
    let (events, ()) = tokio::join!(watching, stopping);
    assert_eq!(events.len(), 1, "only the ERROR arrives: {events:?}");
    assert_eq!(events[0]["type"], "ERROR");
    assert_eq!(events[0]["object"]["code"], 410, "{events:?}");
    assert_eq!(events[0]["object"]["reason"], "Expired");
    // A watch started now is clean, and a resume from before the stop is 410.
    let resumed = t
        .watch(
            &format!("{CM}?watch=1&resourceVersion={from}"),
            1,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(resumed[0]["object"]["code"], 410, "{resumed:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn delayed_watch_events() {
    let faults = FaultConfig::new().watch(
        WatchFault::new()
            .resources(["pods"])
            .delay(Duration::from_millis(1000)),
    );
    let t = start(with_faults(faults)).await;
    let from = t.server.store().current_resource_version();
    let written = Instant::now();
    t.post(PODS, pod("p", None)).await;
    let events = t
        .watch(
            &format!("{PODS}?watch=1&resourceVersion={from}"),
            1,
            Duration::from_secs(3),
        )
        .await;
    assert_eq!(event_types(&events), vec!["ADDED"]);
    assert!(written.elapsed() >= Duration::from_millis(1000));
    // ConfigMap events are on time.
    let from = t.server.store().current_resource_version();
    let written = Instant::now();
    t.post(CM, configmap("c")).await;
    t.watch(
        &format!("{CM}?watch=1&resourceVersion={from}"),
        1,
        Duration::from_secs(3),
    )
    .await;
    assert!(written.elapsed() < Duration::from_millis(800));
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_streams_closed_after_n_events() {
    let faults = FaultConfig::new().watch(WatchFault::new().close_after_events(2));
    let t = start(with_faults(faults)).await;
    let from = t.server.store().current_resource_version();
    for i in 0..5 {
        t.post(CM, configmap(&format!("c{i}"))).await;
    }
    let started = Instant::now();
    let events = t
        .watch(
            &format!("{CM}?watch=1&resourceVersion={from}&timeoutSeconds=10"),
            5,
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(events.len(), 2);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the server closed the stream"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn forced_compaction() {
    let before_watch = FaultConfig::new().compact_before_watch(1.0);
    let t = start(with_faults(before_watch)).await;
    let from = t.server.store().current_resource_version();
    t.post(CM, configmap("c")).await;
    let events = t
        .watch(
            &format!("{CM}?watch=1&resourceVersion={from}"),
            2,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(event_types(&events), vec!["ERROR"]);
    assert_eq!(events[0]["object"]["code"], 410);

    let periodic = FaultConfig::new().compact_every(Duration::from_millis(100));
    let t = start(with_faults(periodic)).await;
    let from = t.server.store().current_resource_version();
    t.post(CM, configmap("c")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let events = t
        .watch(
            &format!("{CM}?watch=1&resourceVersion={from}"),
            2,
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(event_types(&events), vec!["ERROR"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn faults_from_a_yaml_file() {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        "requests:\n  - verbs: [delete]\n    resources: [configmaps]\n    serverError: 1\n",
    )
    .unwrap();
    let faults = FaultConfig::from_file(file.path()).unwrap();
    let t = start(with_faults(faults)).await;
    t.post(CM, configmap("c")).await;
    let reply = t.delete(&format!("{CM}/c"), None).await;
    assert_eq!(
        (reply.code, reply.body["reason"].as_str()),
        (500, Some("InternalError"))
    );
}
