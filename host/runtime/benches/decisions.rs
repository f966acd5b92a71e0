//! Decision cost, wasm vs native, on the same inputs.
//!
//! For every case and size N it measures, per decision:
//! - wasm: a fresh store + instance from the guest's `*Pre`, the model input
//!   projected and lowered into the 0.2.0 component, the call, and the decision
//!   lifted back into the model;
//! - wasm 0.1.0: the same through the checked-in 0.1.0 fixture of the same guest
//!   (tests/fixtures/v0.1.0), which gets the whole projected objects;
//! - native: the same reference logic called directly on the same input, already
//!   projected (what the 0.2.0 guest's logic receives);
//! - instantiate: a fresh store + instance alone (the fixed cost of each decision);
//!   `call-only` is (wasm p50 − instantiate p50) / native p50.
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
mod support;

use std::time::Duration;

use rekon_guest::projection::{claim, pvc};
use rekon_guest_pvc_protection::logic as pvc_logic;
use rekon_guest_resource_claim::logic as claim_logic;
use rekon_runtime::testing::{built_guest, contract_fixture};
use rekon_runtime::{Engine, EngineConfig, GuestPre, Limits, World};

use support::{Stats, sample, us};

const SIZES: [usize; 4] = [1, 10, 100, 1000];
/// One table row: the 0.2.0 guest, its native logic, and the 0.1.0 fixture.
struct Row<'a> {
    case: &'a str,
    n: usize,
    wasm: Stats,
    native: Stats,
    old: Stats,
    instantiate: Duration,
}

impl Row<'_> {
    fn print(&self) {
        let ratio = |wasm: Duration| wasm.as_secs_f64() / self.native.p50.as_secs_f64();
        let call_only = self.wasm.p50.saturating_sub(self.instantiate);
        println!(
            "| {:<18} | {:>5} | {:>9} | {:>9} | {:>9} | {:>9} | {:>7.2}x | {:>7.2}x | {:>9} |",
            self.case,
            self.n,
            us(self.wasm.p50),
            us(self.wasm.p99),
            us(self.native.p50),
            us(self.native.p99),
            ratio(self.wasm.p50),
            ratio(call_only),
            us(self.old.p50),
        );
    }
}

fn load(engine: &Engine, path: &std::path::Path, world: World) -> GuestPre {
    // A generous deadline: on a loaded machine a 1000-element decision's p99 can
    // pass the default, and the benchmark measures time, not the deadline.
    let limits = Limits {
        deadline: Duration::from_secs(10),
        ..Limits::default()
    };
    engine
        .loader()
        .world(world)
        .limits(limits)
        .file(path)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn main() {
    // `cargo bench --bench decisions -- pvc` runs only the cases whose name contains "pvc".
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    let engine = Engine::new(EngineConfig::default()).expect("engine");
    let guest = |stem: &str, world| {
        (
            load(&engine, &built_guest(stem), world),
            load(&engine, &contract_fixture("0.1.0", stem), world),
        )
    };
    let (pvc, pvc_old) = guest(
        "rekon_guest_pvc_protection",
        World::of::<rekon_contract::PvcProtectionWorld>(),
    );
    let (claim, claim_old) = guest(
        "rekon_guest_resource_claim",
        World::of::<rekon_contract::ResourceClaimWorld>(),
    );

    println!("instantiate only (fresh store + instance, no call):");
    println!("| guest          | p50 µs | p99 µs |");
    println!("|----------------|-------:|-------:|");
    let mut instantiate = Vec::new();
    for (name, guest) in [("pvc-protection", &pvc), ("resource-claim", &claim)] {
        let stats = sample(&(), |()| guest.instantiate().expect("instantiate"));
        println!(
            "| {name:<14} | {:>6} | {:>6} |",
            us(stats.p50),
            us(stats.p99)
        );
        instantiate.push(stats.p50);
    }

    println!();
    println!("fresh instance + decision (wasm, contract 0.2.0) vs the same logic native:");
    println!(
        "| decision           |     N | wasm p50 µs | wasm p99 µs | native p50 µs | native p99 µs | wasm/native p50 | call-only/native p50 | wasm 0.1.0 p50 µs |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let wanted = |case: &str| case.contains(filter.as_str());
    for n in SIZES.into_iter().filter(|_| wanted("pvc decide")) {
        let input = common::unused_deleting_pvc(n);
        let projected = pvc::PvcInput::from(input.clone());
        let expected = pvc_logic::decide(&projected);
        assert_eq!(pvc.decide_pvc(input.clone()).unwrap(), expected);
        assert_eq!(pvc_old.decide_pvc(input.clone()).unwrap(), expected);
        Row {
            case: "pvc decide",
            n,
            wasm: sample(&input, |i| pvc.decide_pvc(i).expect("pvc decide")),
            native: sample(&projected, |i| pvc_logic::decide(&i)),
            old: sample(&input, |i| pvc_old.decide_pvc(i).expect("pvc decide")),
            instantiate: instantiate[0],
        }
        .print();
    }
    for n in SIZES.into_iter().filter(|_| wanted("claim decide-claim")) {
        let input = common::claim_with_reservations(n);
        let projected = claim::ClaimInput::from(input.clone());
        let expected = claim_logic::decide_claim(&projected);
        assert_eq!(claim.decide_claim(input.clone()).unwrap(), expected);
        assert_eq!(claim_old.decide_claim(input.clone()).unwrap(), expected);
        Row {
            case: "claim decide-claim",
            n,
            wasm: sample(&input, |i| claim.decide_claim(i).expect("decide-claim")),
            native: sample(&projected, |i| claim_logic::decide_claim(&i)),
            old: sample(&input, |i| claim_old.decide_claim(i).expect("decide-claim")),
            instantiate: instantiate[1],
        }
        .print();
    }
    for n in SIZES.into_iter().filter(|_| wanted("pod decide-pod")) {
        let input = common::pod_with_template_claims(n);
        let expected = claim_logic::decide_pod(&input);
        assert_eq!(claim.decide_pod(input.clone()).unwrap(), expected);
        assert_eq!(claim_old.decide_pod(input.clone()).unwrap(), expected);
        Row {
            case: "pod decide-pod",
            n,
            wasm: sample(&input, |i| claim.decide_pod(i).expect("decide-pod")),
            native: sample(&input, |i| claim_logic::decide_pod(&i)),
            old: sample(&input, |i| claim_old.decide_pod(i).expect("decide-pod")),
            instantiate: instantiate[1],
        }
        .print();
    }
}
