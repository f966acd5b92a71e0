//! Two contract versions served side by side: the 0.1.0 reference guests checked
//! in as fixtures (tests/fixtures/v0.1.0) and the same guests built against 0.2.0
//! load into one engine, report their version and decide identically.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use arc_swap::ArcSwap;
use common::*;
use rekon_contract::model::*;
use rekon_guest::cases::{check, read_dir, run_all};
use rekon_runtime::testing::{built_guest, contract_fixture};
use rekon_runtime::{Engine, EngineConfig, GuestPre, World};

fn engine() -> Engine {
    Engine::new(EngineConfig::default()).unwrap()
}

fn load(engine: &Engine, path: &Path) -> GuestPre {
    engine.loader().file(path).unwrap_or_else(|e| panic!("{e}"))
}

/// (0.1.0 fixture, 0.2.0 build) of one reference guest, in one engine.
fn both(engine: &Engine, stem: &str) -> (GuestPre, GuestPre) {
    let old = load(engine, &contract_fixture("0.1.0", stem));
    let new = load(engine, &built_guest(stem));
    assert_eq!(old.version().version, "0.1.0");
    assert_eq!(new.version().version, "0.2.0");
    assert_eq!(old.world(), new.world());
    (old, new)
}

fn pvc_inputs() -> Vec<PvcInput> {
    let used = pod_using("web", "data");
    let mut unscheduled = pod_using("pending", "data");
    unscheduled.node_name.clear();
    let mut elsewhere = pod_using("elsewhere", "data");
    elsewhere.meta.namespace = "other".into();
    let mut fresh = pvc("fresh", false);
    fresh.meta.finalizers.clear();
    vec![
        PvcInput {
            pvc: fresh,
            ..PvcInput::default()
        },
        PvcInput {
            pvc: pvc("data", true),
            cached_pods: unrelated_pods(3),
            live_pods: None,
        },
        PvcInput {
            pvc: pvc("data", true),
            cached_pods: vec![used.clone()],
            live_pods: None,
        },
        unused_deleting_pvc(10),
        PvcInput {
            pvc: pvc("data", true),
            cached_pods: Vec::new(),
            live_pods: Some(vec![unscheduled, elsewhere]),
        },
        PvcInput {
            pvc: pvc("data", true),
            cached_pods: Vec::new(),
            live_pods: Some(vec![used]),
        },
    ]
}

#[test]
fn a_0_1_0_and_a_0_2_0_pvc_guest_decide_alike_in_one_engine() {
    let engine = engine();
    let (old, new) = both(&engine, "rekon_guest_pvc_protection");
    let mut outcomes = std::collections::HashSet::new();
    for input in pvc_inputs() {
        let from_old = old.decide_pvc(input.clone()).unwrap();
        let from_new = new.decide::<rekon_contract::PvcProtectionWorld>(input.clone());
        assert_eq!(from_new.unwrap(), from_old, "input: {input:?}");
        outcomes.insert(format!("{from_old:?}"));
    }
    assert!(outcomes.len() >= 3, "{outcomes:?}");
}

#[test]
fn a_0_1_0_and_a_0_2_0_claim_guest_decide_alike_in_one_engine() {
    let engine = engine();
    let (old, new) = both(&engine, "rekon_guest_resource_claim");
    for n in [0, 1, 4] {
        let input = pod_with_template_claims(n);
        assert_eq!(
            new.decide_pod(input.clone()).unwrap(),
            old.decide_pod(input).unwrap()
        );
    }
    let mut unknown = claim_with_reservations(2);
    unknown.reservations[0].pod = PodLookup::Unknown;
    let mut live = claim_with_reservations(3);
    live.reservations[1].pod = PodLookup::NotFound;
    for input in [claim_with_reservations(6), unknown, live] {
        let decision = old.decide_claim(input.clone()).unwrap();
        assert_ne!(decision, ClaimDecision::Actions(Vec::new()));
        assert_eq!(new.decide_claim(input).unwrap(), decision);
    }
}

#[test]
fn the_0_1_0_fixtures_pass_the_guests_case_files() {
    let engine = engine();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guests");
    let pvc = load(
        &engine,
        &contract_fixture("0.1.0", "rekon_guest_pvc_protection"),
    );
    let files = read_dir(&root.join("pvc-protection/cases"));
    let counts = run_all(&files, |case| {
        check::<PvcInput, PvcDecision>(case, |input| pvc.decide_pvc(input.clone()).unwrap())
    });
    assert!(counts["decide"] >= 24, "{counts:?}");

    let claim = load(
        &engine,
        &contract_fixture("0.1.0", "rekon_guest_resource_claim"),
    );
    let files = read_dir(&root.join("resource-claim/cases"));
    let counts = run_all(&files, |case| match case.decision.as_str() {
        "decide-pod" => {
            check::<PodInput, PodDecision>(case, |input| claim.decide_pod(input.clone()).unwrap())
        }
        "decide-claim" => check::<ClaimInput, ClaimDecision>(case, |input| {
            claim.decide_claim(input.clone()).unwrap()
        }),
        other => Err(format!("unknown decision {other:?}")),
    });
    assert!(
        counts["decide-pod"] >= 24 && counts["decide-claim"] >= 20,
        "{counts:?}"
    );
}

/// Deciders read the guest through an `ArcSwap`, as the module manager does:
/// swapping the 0.1.0 module for the 0.2.0 one while decisions run fails none.
#[test]
fn hot_swap_from_0_1_0_to_0_2_0_under_load_fails_no_decision() {
    let engine = engine();
    let (old, new) = both(&engine, "rekon_guest_pvc_protection");
    let input = unused_deleting_pvc(10);
    let expected = old.decide_pvc(input.clone()).unwrap();
    let active = Arc::new(ArcSwap::from_pointee(old));
    let stop = Arc::new(AtomicBool::new(false));
    let by_version = [Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0))];
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (active, stop, input, expected) = (
                active.clone(),
                stop.clone(),
                input.clone(),
                expected.clone(),
            );
            let by_version = by_version.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let guest = active.load_full();
                    let decision = guest.decide_pvc(input.clone()).expect("no decision fails");
                    assert_eq!(decision, expected);
                    let slot = usize::from(guest.version().version == "0.2.0");
                    by_version[slot].fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let wait_for = |slot: usize, at_least: usize| {
        while by_version[slot].load(Ordering::Relaxed) < at_least {
            std::thread::yield_now();
        }
    };
    wait_for(0, 20);
    active.store(Arc::new(new));
    wait_for(1, 20);
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().expect("a worker failed a decision");
    }
    assert!(by_version[0].load(Ordering::Relaxed) >= 20);
    assert!(by_version[1].load(Ordering::Relaxed) >= 20);
    assert_eq!(
        active.load().world(),
        World::of::<rekon_contract::PvcProtectionWorld>()
    );
}
