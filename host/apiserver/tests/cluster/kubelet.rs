//! The kubelet that finishes graceful pod deletion, and PVC-protection admission.

use std::time::{Duration, Instant};

use rekon_apiserver::{KubeletMode, ServerConfig};
use serde_json::json;

use crate::support::*;

#[tokio::test(flavor = "multi_thread")]
async fn instant_kubelet_finishes_graceful_deletion() {
    let t = start(ServerConfig::new().kubelet(KubeletMode::Instant)).await;
    let created = t.post(PODS, pod("p", Some("n1"))).await;
    let reply = t.delete(&format!("{PODS}/p"), None).await;
    assert_eq!(reply.body["metadata"]["deletionGracePeriodSeconds"], 30);
    let events = t
        .watch(
            &format!("{PODS}?watch=1&resourceVersion={}", created.rv()),
            3,
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(
        event_types(&events),
        vec!["MODIFIED", "MODIFIED", "DELETED"]
    );
    assert_eq!(
        events[1]["object"]["metadata"]["deletionGracePeriodSeconds"],
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn delayed_kubelet_waits() {
    let t =
        start(ServerConfig::new().kubelet(KubeletMode::Delay(Duration::from_millis(400)))).await;
    t.post(PODS, pod("p", Some("n1"))).await;
    let started = Instant::now();
    t.delete(&format!("{PODS}/p"), None).await;
    assert_eq!(t.get(&format!("{PODS}/p")).await.code, 200);
    assert!(
        eventually(Duration::from_secs(5), async || t
            .get(&format!("{PODS}/p"))
            .await
            .code
            == 404)
        .await
    );
    assert!(started.elapsed() >= Duration::from_millis(400));
}

#[tokio::test(flavor = "multi_thread")]
async fn pvc_protection_admission_adds_the_finalizer() {
    let on = start(ServerConfig::new().pvc_protection_admission(true)).await;
    let reply = on.post(PVCS, pvc("p")).await;
    assert_eq!(
        reply.body["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );
    let off = start_default().await;
    let reply = off.post(PVCS, pvc("p")).await;
    assert!(reply.body["metadata"].get("finalizers").is_none());
}
