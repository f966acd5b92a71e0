//! kube-runtime watcher + reflector converge to the server state and survive compaction
//! (re-list after the in-stream 410).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::runtime::{reflector, watcher};
use rekon_apiserver::{FaultConfig, ServerConfig, Store, WatchFault, WriteOptions, resources};
use serde_json::json;

use crate::support::*;

fn create(store: &Store, name: &str, value: &str) {
    let mut body = configmap(name);
    body["data"]["k"] = json!(value);
    let configmaps = resources::by_plural("", "configmaps").unwrap();
    store
        .create(configmaps, "default", body, &WriteOptions::default())
        .unwrap();
}

/// What the reflector holds versus what the server holds: (name, value) pairs.
fn server_state(store: &Store) -> Vec<(String, String)> {
    let mut state: Vec<(String, String)> = store
        .snapshot()
        .into_iter()
        .filter(|o| o["kind"] == "ConfigMap")
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap().to_string(),
                o["data"]["k"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    state.sort();
    state
}

fn reflected_state(reader: &reflector::Store<ConfigMap>) -> Vec<(String, String)> {
    let mut state: Vec<(String, String)> = reader
        .state()
        .iter()
        .map(|cm| {
            let value = cm
                .data
                .as_ref()
                .and_then(|d| d.get("k"))
                .cloned()
                .unwrap_or_default();
            (cm.metadata.name.clone().unwrap(), value)
        })
        .collect();
    state.sort();
    state
}

async fn run_reflector(t: &TestServer, config: watcher::Config) {
    let store = t.server.store();
    for i in 0..5 {
        create(&store, &format!("seed-{i}"), "0");
    }
    let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
    let (reader, writer) = reflector::store();
    let restarts = Arc::new(AtomicUsize::new(0));
    let expired = Arc::new(AtomicUsize::new(0));
    let (restarts_seen, expired_seen) = (restarts.clone(), expired.clone());
    let task = tokio::spawn(
        reflector(writer, watcher(api, config)).for_each(move |event| {
            match event {
                Ok(watcher::Event::Init) => {
                    restarts_seen.fetch_add(1, Ordering::SeqCst);
                }
                Err(watcher::Error::WatchError(status)) if status.code == 410 => {
                    expired_seen.fetch_add(1, Ordering::SeqCst);
                }
                _ => {}
            }
            futures::future::ready(())
        }),
    );
    reader.wait_until_ready().await.unwrap();
    assert!(
        eventually(Duration::from_secs(5), async || reflected_state(&reader)
            == server_state(&store))
        .await
    );

    // A burst larger than the history while the watch lags behind (delayed events), then an
    // explicit compaction: the watch cannot continue and must re-list.
    for i in 0..30 {
        create(&store, &format!("burst-{i}"), "1");
    }
    store.compact();
    create(&store, "after-compaction", "2");
    let converged = eventually(Duration::from_secs(15), async || {
        reflected_state(&reader) == server_state(&store)
    })
    .await;
    assert!(
        converged,
        "reflector holds {} objects, server {}",
        reflected_state(&reader).len(),
        server_state(&store).len()
    );
    assert!(
        expired.load(Ordering::SeqCst) >= 1,
        "the watch saw the in-stream 410"
    );
    assert!(
        restarts.load(Ordering::SeqCst) >= 2,
        "the watcher re-listed"
    );
    task.abort();
}

fn lagging_server() -> ServerConfig {
    ServerConfig::new().history_limit(5).faults(
        FaultConfig::new().watch(
            WatchFault::new()
                .resources(["configmaps"])
                .delay(Duration::from_millis(200)),
        ),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn watcher_and_reflector_survive_compaction() {
    let t = start(lagging_server()).await;
    run_reflector(&t, watcher::Config::default()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn streaming_list_watcher_survives_compaction() {
    let t = start(lagging_server()).await;
    run_reflector(&t, watcher::Config::default().streaming_lists()).await;
}
