//! Helpers for end-to-end tests of `DecisionModule` objects: wait for a
//! condition, ship a module in a ConfigMap, create or replace an object, and
//! wait for its status.

use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use rekon_modules::ModuleDigest;
use rekon_modules::object::{DecisionModule, DecisionModuleSpec, DecisionModuleStatus};
use serde_json::Value;

/// Polls `probe` every 100 ms until it finds something; fails naming `what` after `timeout`.
pub async fn wait_for<T>(
    what: &str,
    timeout: Duration,
    probe: impl AsyncFnMut() -> Option<T>,
) -> T {
    match wait_for_or(timeout, probe).await {
        Some(found) => found,
        None => panic!("timed out after {timeout:?} waiting for {what}"),
    }
}

/// Polls `probe` every 100 ms until it finds something or `timeout` passed.
pub async fn wait_for_or<T>(
    timeout: Duration,
    mut probe: impl AsyncFnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(found) = probe().await {
            return Some(found);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Ships `bytes` in ConfigMap `namespace/name` (key `module.wasm`); returns their digest.
pub async fn ship(client: &Client, namespace: &str, name: &str, bytes: &[u8]) -> ModuleDigest {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        binary_data: Some([("module.wasm".to_string(), ByteString(bytes.to_vec()))].into()),
        ..ConfigMap::default()
    };
    maps.create(&PostParams::default(), &map).await.unwrap();
    ModuleDigest::of(bytes)
}

/// Creates or replaces DecisionModule `name` with `spec`.
pub async fn apply(client: &Client, name: &str, spec: Value) {
    let spec: DecisionModuleSpec = serde_json::from_value(spec).unwrap();
    let api: Api<DecisionModule> = Api::all(client.clone());
    match api.get_opt(name).await.unwrap() {
        Some(mut existing) => {
            existing.spec = spec;
            api.replace(name, &PostParams::default(), &existing)
                .await
                .unwrap();
        }
        None => {
            api.create(&PostParams::default(), &DecisionModule::new(name, spec))
                .await
                .unwrap();
        }
    }
}

/// Waits for `name`'s status of its current generation to satisfy `done`.
pub async fn status(
    client: &Client,
    name: &str,
    timeout: Duration,
    done: impl Fn(&DecisionModuleStatus) -> bool,
) -> DecisionModuleStatus {
    let api: Api<DecisionModule> = Api::all(client.clone());
    let mut last = None;
    let found = wait_for_or(timeout, async || {
        let object = api.get(name).await.ok()?;
        let status = object.status?;
        last = Some(status.clone());
        (status.observed_generation == object.metadata.generation && done(&status))
            .then_some(status)
    })
    .await;
    found.unwrap_or_else(|| panic!("{name}: status never matched; last: {last:#?}"))
}

/// Creates namespace `name`.
pub async fn create_namespace(client: &Client, name: &str) {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
}
