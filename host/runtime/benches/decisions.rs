//! Decision cost, wasm vs native, on the same model inputs.
//!
//! For every case and size N it measures, per decision:
//! - wasm: a fresh store + instance from the guest's `*Pre`, the input moved into
//!   WIT values, the call, and the decision moved back into the model;
//! - native: the same reference logic called directly on the same input;
//! - instantiate: a fresh store + instance alone (the fixed cost of each decision).
//!
//! Inputs (built in `tests/common`):
//! - `pvc decide`: a deleting PVC with its finalizer, N cached pods none of which
//!   uses it, and a live list of the same N pods — the full two-phase scan that
//!   ends in removing the finalizer.
//! - `claim decide-claim`: an allocated claim reserved for N cached pods, every
//!   second one done — drops half the reservations.
//! - `pod decide-pod`: a pod with N claims from one template, none created yet —
//!   N claims to create plus the full status.
//!
//! Inputs are cloned before the timer starts; results are dropped after it stops.
//! Run with `cargo bench -p rekon-runtime --bench decisions` (`make bench`).

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use rekon_guest_pvc_protection::logic as pvc_logic;
use rekon_guest_resource_claim::logic as claim_logic;
use rekon_runtime::testing::built_guest;
use rekon_runtime::{Engine, EngineConfig, GuestPre, World};

const SIZES: [usize; 4] = [1, 10, 100, 1000];
const WARMUP: usize = 50;
const MIN_SAMPLES: usize = 200;
const MAX_SAMPLES: usize = 20_000;
const BUDGET: Duration = Duration::from_millis(1500);

/// Times `run` on fresh copies of `input`; only `run` is inside the timer.
fn sample<I: Clone, O>(input: &I, mut run: impl FnMut(I) -> O) -> Stats {
    for _ in 0..WARMUP {
        black_box(run(input.clone()));
    }
    let mut samples = Vec::with_capacity(MAX_SAMPLES);
    let started = Instant::now();
    while samples.len() < MAX_SAMPLES && (samples.len() < MIN_SAMPLES || started.elapsed() < BUDGET)
    {
        let input = input.clone();
        let t0 = Instant::now();
        let output = black_box(run(black_box(input)));
        samples.push(t0.elapsed());
        drop(output);
    }
    Stats::of(samples)
}

struct Stats {
    p50: Duration,
    p99: Duration,
}

impl Stats {
    fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Self {
            p50: at(0.50),
            p99: at(0.99),
        }
    }
}

fn us(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e6)
}

fn row(case: &str, n: usize, wasm: &Stats, native: &Stats) {
    let ratio = wasm.p50.as_secs_f64() / native.p50.as_secs_f64();
    println!(
        "| {case:<18} | {n:>5} | {:>9} | {:>9} | {:>9} | {:>9} | {:>8.1}x |",
        us(wasm.p50),
        us(wasm.p99),
        us(native.p50),
        us(native.p99),
        ratio
    );
}

fn load(engine: &Engine, stem: &str, world: World) -> GuestPre {
    engine
        .loader()
        .world(world)
        .file(built_guest(stem))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn main() {
    // `cargo bench --bench decisions -- pvc` runs only the cases whose name contains "pvc".
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    let engine = Engine::new(EngineConfig::default()).expect("engine");
    let pvc = load(&engine, "rekon_guest_pvc_protection", World::PvcProtection);
    let claim = load(&engine, "rekon_guest_resource_claim", World::ResourceClaim);

    println!("instantiate only (fresh store + instance, no call):");
    println!("| guest          | p50 µs | p99 µs |");
    println!("|----------------|-------:|-------:|");
    for (name, guest) in [("pvc-protection", &pvc), ("resource-claim", &claim)] {
        let stats = sample(&(), |()| guest.instantiate().expect("instantiate"));
        println!(
            "| {name:<14} | {:>6} | {:>6} |",
            us(stats.p50),
            us(stats.p99)
        );
    }

    println!();
    println!("fresh instance + decision (wasm) vs the same logic native:");
    println!(
        "| decision           |     N | wasm p50 µs | wasm p99 µs | native p50 µs | native p99 µs | wasm/native p50 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for n in SIZES
        .into_iter()
        .filter(|_| "pvc decide".contains(filter.as_str()))
    {
        let input = common::unused_deleting_pvc(n);
        let wasm = sample(&input, |i| pvc.decide_pvc(i).expect("pvc decide"));
        let native = sample(&input, |i| pvc_logic::decide(&i));
        check_same(
            &pvc.decide_pvc(input.clone()).unwrap(),
            &pvc_logic::decide(&input),
        );
        row("pvc decide", n, &wasm, &native);
    }
    for n in SIZES
        .into_iter()
        .filter(|_| "claim decide-claim".contains(filter.as_str()))
    {
        let input = common::claim_with_reservations(n);
        let wasm = sample(&input, |i| claim.decide_claim(i).expect("decide-claim"));
        let native = sample(&input, |i| claim_logic::decide_claim(&i));
        check_same(
            &claim.decide_claim(input.clone()).unwrap(),
            &claim_logic::decide_claim(&input),
        );
        row("claim decide-claim", n, &wasm, &native);
    }
    for n in SIZES
        .into_iter()
        .filter(|_| "pod decide-pod".contains(filter.as_str()))
    {
        let input = common::pod_with_template_claims(n);
        let wasm = sample(&input, |i| claim.decide_pod(i).expect("decide-pod"));
        let native = sample(&input, |i| claim_logic::decide_pod(&i));
        check_same(
            &claim.decide_pod(input.clone()).unwrap(),
            &claim_logic::decide_pod(&input),
        );
        row("pod decide-pod", n, &wasm, &native);
    }
}

/// The benchmark is only meaningful if both sides decide the same.
fn check_same<T: PartialEq + std::fmt::Debug>(wasm: &T, native: &T) {
    assert_eq!(wasm, native, "wasm and native decisions differ");
}
