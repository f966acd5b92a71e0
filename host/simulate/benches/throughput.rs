//! End-to-end reconcile throughput, wasm guests vs the same logic linked natively.
//!
//! Both runs start the embedded API server with the same state (N deleting,
//! unused PVCs and N pods with a template claim), run the host until it is idle,
//! and count decisions per second. The difference is the whole wasm cost on the
//! reconcile path: input conversion, a fresh instance, the call, decoding.
//!
//! The wasm rows run each language whose modules are built (Rust, TypeScript),
//! compiled once before the runs; a language not built is skipped with a line.
//!
//! `cargo bench -p rekon-simulate --bench throughput` (after `make guests`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rekon_contract::{PvcProtectionWorld, ResourceClaimWorld};
use rekon_controllers::builtin::native_deciders;
use rekon_controllers::decider::Slot;
use rekon_controllers::journal::{Entry, Journal};
use rekon_runtime::{Engine, EngineConfig, GuestPre, World};
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

/// The pvc-protection and resource-claim modules of one language, compiled once.
#[derive(Clone)]
struct Guests {
    language: &'static str,
    pvc: GuestPre,
    claim: GuestPre,
}

impl Guests {
    /// `suffix` is the language's file suffix (`""` for Rust, `"_ts"`); `None`
    /// when its modules are not built.
    fn load(engine: &Engine, language: &'static str, suffix: &str) -> Option<Self> {
        let dir = rekon_runtime::testing::guest_dir();
        let path = |world: &str| dir.join(format!("rekon_guest_{world}{suffix}.wasm"));
        let (pvc, claim) = (path("pvc_protection"), path("resource_claim"));
        if let Some(missing) = [&pvc, &claim].into_iter().find(|p| !p.is_file()) {
            println!(
                "skipped the {language} guests: {} is not built (run `make guests`)",
                missing.display()
            );
            return None;
        }
        let load = |path: &std::path::Path, world| {
            engine
                .loader()
                .world(world)
                .file(path)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        Some(Self {
            language,
            pvc: load(&pvc, World::of::<PvcProtectionWorld>()),
            claim: load(&claim, World::of::<ResourceClaimWorld>()),
        })
    }

    fn deciders(&self) -> Deciders {
        Deciders::new()
            .with(Arc::new(Slot::<PvcProtectionWorld>::new(Arc::new(
                self.pvc.clone(),
            ))))
            .with(Arc::new(Slot::<ResourceClaimWorld>::new(Arc::new(
                self.claim.clone(),
            ))))
    }
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
    let engine = Engine::new(EngineConfig::default()).expect("engine");
    let languages: Vec<Guests> = [("Rust", ""), ("TypeScript", "_ts")]
        .into_iter()
        .filter_map(|(language, suffix)| Guests::load(&engine, language, suffix))
        .collect();
    // Warm up every path once (first connections, first instances).
    let _ = run(native_deciders()).await;
    for guests in &languages {
        let _ = run(guests.deciders()).await;
    }
    let mut native_rates = Vec::new();
    let mut wasm_rates = vec![Vec::new(); languages.len()];
    for _ in 0..3 {
        native_rates.push(run(native_deciders()).await);
        for (guests, rates) in languages.iter().zip(&mut wasm_rates) {
            rates.push(run(guests.deciders()).await);
        }
    }
    let median = |v: &mut Vec<(usize, f64)>| {
        v.sort_by(|a, b| a.1.total_cmp(&b.1));
        v[v.len() / 2]
    };
    let (nd, n) = median(&mut native_rates);
    println!(
        "end-to-end reconcile throughput, {N} deleting PVCs + {N} pods with a template claim (median of 3)"
    );
    println!("| host | decisions | decisions/s | ratio to native |");
    println!("|---|---|---|---|");
    println!("| native-linked logic | {nd} | {n:.0} | 1.00 |");
    let mut rust = None;
    for (guests, rates) in languages.iter().zip(&mut wasm_rates) {
        let (wd, w) = median(rates);
        println!(
            "| wasm guests, {} | {wd} | {w:.0} | {:.2} |",
            guests.language,
            w / n
        );
        if guests.language == "Rust" {
            rust = Some(w);
        } else if let Some(rust) = rust {
            println!(
                "{} / Rust guests throughput ratio: {:.2}",
                guests.language,
                w / rust
            );
        }
    }
}
