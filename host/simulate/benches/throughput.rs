//! End-to-end reconcile throughput, wasm guests vs the same logic linked natively.
//!
//! Both runs start the embedded API server with the same state (N deleting,
//! unused PVCs and N pods with a template claim), run the host until it is idle,
//! and count decisions per second. The difference is the whole wasm cost on the
//! reconcile path: input conversion, a fresh instance, the call, decoding.
//!
//! `cargo bench -p rekon-simulate --bench throughput` (after `make guests`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rekon_contract::{PvcProtectionWorld, ResourceClaimWorld};
use rekon_controllers::decider::{Native, Slot};
use rekon_controllers::journal::{Entry, Journal};
use rekon_runtime::{Engine, EngineConfig, World};
use rekon_simulate::{ClusterOptions, Deciders, Settle, simulate};
use serde_json::{Value, json};

const N: usize = 300;

fn state() -> Vec<Value> {
    let mut objects =
        vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})];
    objects.push(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"namespace": "bench", "name": "gpu"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
    }));
    for i in 0..N {
        objects.push(json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"namespace": "bench", "name": format!("data-{i}"),
                         "finalizers": ["kubernetes.io/pvc-protection"],
                         "deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
        }));
        objects.push(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": "bench", "name": format!("pod-{i}")},
            "spec": {"containers": [{"name": "c", "image": "i"}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}
        }));
    }
    objects
}

fn wasm() -> Deciders {
    let dir = rekon_runtime::testing::guest_dir();
    let engine = Engine::new(EngineConfig::default()).expect("engine");
    let pvc = engine
        .loader()
        .world(World::of::<rekon_contract::PvcProtectionWorld>())
        .file(dir.join("rekon_guest_pvc_protection.wasm"))
        .expect("run `make guests`");
    let claim = engine
        .loader()
        .world(World::of::<rekon_contract::ResourceClaimWorld>())
        .file(dir.join("rekon_guest_resource_claim.wasm"))
        .expect("run `make guests`");
    Deciders::new()
        .with(Arc::new(Slot::<PvcProtectionWorld>::new(Arc::new(pvc))))
        .with(Arc::new(Slot::<ResourceClaimWorld>::new(Arc::new(claim))))
}

fn native() -> Deciders {
    Deciders::all(Arc::new(Native))
}

/// Decisions per second until idle (the quiet period is subtracted).
async fn run(deciders: Deciders) -> (usize, f64) {
    let journal = Arc::new(Journal::new());
    let settle = Settle {
        quiet: Duration::from_millis(200),
        requeue_bound: Duration::from_secs(1),
        timeout: Duration::from_secs(120),
    };
    let started = Instant::now();
    let report = simulate(
        state(),
        vec![],
        ClusterOptions::default(),
        settle.clone(),
        deciders,
        journal.clone(),
    )
    .await
    .expect("simulation");
    report.converged.expect("converged");
    let took = started.elapsed().saturating_sub(settle.quiet).as_secs_f64();
    let decisions = journal
        .entries()
        .iter()
        .filter(|e| matches!(e, Entry::Decision { .. }))
        .count();
    (decisions, decisions as f64 / took)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    // Warm up both paths once (compilation, first connections).
    let _ = run(native()).await;
    let _ = run(wasm()).await;
    let mut native_rates = Vec::new();
    let mut wasm_rates = Vec::new();
    for _ in 0..3 {
        native_rates.push(run(native()).await);
        wasm_rates.push(run(wasm()).await);
    }
    let median = |v: &mut Vec<(usize, f64)>| {
        v.sort_by(|a, b| a.1.total_cmp(&b.1));
        v[v.len() / 2]
    };
    let (nd, n) = median(&mut native_rates);
    let (wd, w) = median(&mut wasm_rates);
    println!(
        "end-to-end reconcile throughput, {N} deleting PVCs + {N} pods with a template claim (median of 3)"
    );
    println!("| host | decisions | decisions/s |");
    println!("|---|---|---|");
    println!("| native-linked logic | {nd} | {n:.0} |");
    println!("| wasm guests | {wd} | {w:.0} |");
    println!("wasm/native throughput ratio: {:.2}", w / n);
}
