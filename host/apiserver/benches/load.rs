//! The embedded server under a controller-like load: N pods and N PVCs in one namespace,
//! the garbage collector and an instant kubelet on, four watchers, and a stream of writes
//! (claims owned by pods, finalizer patches, deletes) from four concurrent clients.
//! Prints writes per second and the cost of one full list.
//!
//! `cargo bench -p rekon-apiserver --bench load` (`LOAD_N=50000` for a larger store).

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
use kube::core::WatchEvent;
use rekon_apiserver::{ApiServer, KubeletMode, ServerConfig};
use serde_json::{Value, json};

const CLIENTS: usize = 4;

fn seed(n: usize) -> Vec<Value> {
    let mut objects = Vec::with_capacity(2 * n);
    for i in 0..n {
        objects.push(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": "load", "name": format!("pod-{i}")},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}}));
        objects.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"namespace": "load", "name": format!("pvc-{i}"),
                         "finalizers": ["kubernetes.io/pvc-protection"]},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}));
    }
    objects
}

async fn watch_all<K>(api: Api<K>)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let stream = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch");
    let mut stream = Box::pin(stream);
    while let Some(event) = stream.next().await {
        if matches!(event, Ok(WatchEvent::Error(_)) | Err(_)) {
            return;
        }
    }
}

/// One client's share of writes: per object, a ConfigMap owned by the pod, a label patch on
/// the PVC, then the PVC's delete and the finalizer removal that completes it.
async fn writes(client: kube::Client, first: usize, count: usize) -> usize {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "load");
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "load");
    let cms: Api<ConfigMap> = Api::namespaced(client, "load");
    let mut done = 0;
    for i in first..first + count {
        let pod = pods.get(&format!("pod-{i}")).await.expect("pod");
        let uid = pod.metadata.uid.unwrap();
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("cm-{i}"),
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": format!("pod-{i}"), "uid": uid}]}}))
        .unwrap();
        cms.create(&PostParams::default(), &cm)
            .await
            .expect("create");
        let name = format!("pvc-{i}");
        let label = json!({"metadata": {"labels": {"touched": "yes"}}});
        pvcs.patch(&name, &PatchParams::default(), &Patch::Merge(&label))
            .await
            .expect("patch");
        pvcs.delete(&name, &DeleteParams::default())
            .await
            .expect("delete");
        let release = json!({"metadata": {"finalizers": null}});
        pvcs.patch(&name, &PatchParams::default(), &Patch::Merge(&release))
            .await
            .expect("release");
        done += 4;
    }
    done
}

fn main() {
    let n: usize = std::env::var("LOAD_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let writes_per_client: usize = 250;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let config = ServerConfig::new()
            .garbage_collector(true)
            .kubelet(KubeletMode::Instant);
        let server = ApiServer::start(config, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let started = Instant::now();
        server.store().load_objects(seed(n)).unwrap();
        println!("seeded {} objects in {:?}", 2 * n, started.elapsed());
        let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();

        let started = Instant::now();
        let pods: Api<Pod> = Api::namespaced(client.clone(), "load");
        let listed = pods.list(&ListParams::default()).await.unwrap();
        println!("list of {} pods: {:?}", listed.items.len(), started.elapsed());

        let watchers = vec![
            tokio::spawn(watch_all(Api::<Pod>::all(client.clone()))),
            tokio::spawn(watch_all(Api::<PersistentVolumeClaim>::all(client.clone()))),
            tokio::spawn(watch_all(Api::<ConfigMap>::all(client.clone()))),
            tokio::spawn(watch_all(Api::<Pod>::namespaced(client.clone(), "load"))),
        ];
        tokio::time::sleep(Duration::from_millis(500)).await;

        let started = Instant::now();
        let tasks: Vec<_> = (0..CLIENTS)
            .map(|c| tokio::spawn(writes(client.clone(), c * writes_per_client, writes_per_client)))
            .collect();
        let mut total = 0;
        for task in tasks {
            total += task.await.unwrap();
        }
        let took = started.elapsed();
        println!(
            "{total} writes (+{} gets) by {CLIENTS} clients with {} objects stored: {:?}, {:.0} writes/s",
            CLIENTS * writes_per_client,
            2 * n,
            took,
            total as f64 / took.as_secs_f64()
        );
        for w in watchers {
            w.abort();
        }
        server.shutdown().await;
    });
}
