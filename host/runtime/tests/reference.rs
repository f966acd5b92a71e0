//! The reference guests decide in wasm exactly as their logic does natively,
//! run through the guest-author harness.

mod common;

use common::*;
use rekon_contract::model::*;
use rekon_guest_pvc_protection::logic as pvc_logic;
use rekon_guest_resource_claim::logic as claim_logic;
use rekon_runtime::testing::{GuestHarness, built_guest};

fn pvc_inputs() -> Vec<PvcInput> {
    let mut without_finalizer = pvc("fresh", false);
    without_finalizer.meta.finalizers.clear();
    let used = pod_using("web", "data");
    let mut shut_down = pod_using("gone", "data");
    shut_down.meta.deletion_timestamp = Some(DELETED_AT.into());
    shut_down.meta.deletion_grace_period_seconds = Some(0);
    vec![
        PvcInput {
            pvc: without_finalizer,
            ..PvcInput::default()
        },
        // Deleting, cache shows nothing: ask for the live list.
        PvcInput {
            pvc: pvc("data", true),
            cached_pods: unrelated_pods(3),
            live_pods: None,
        },
        // Deleting, a cached pod uses it: keep the finalizer.
        PvcInput {
            pvc: pvc("data", true),
            cached_pods: vec![used.clone()],
            live_pods: None,
        },
        // Deleting, the live list shows no user: remove.
        unused_deleting_pvc(10),
        // Deleting, live list has a user.
        PvcInput {
            pvc: pvc("data", true),
            cached_pods: Vec::new(),
            live_pods: Some(vec![used]),
        },
        // Deleting, the only user is shut down.
        PvcInput {
            pvc: pvc("data", true),
            cached_pods: Vec::new(),
            live_pods: Some(vec![shut_down]),
        },
    ]
}

#[test]
fn pvc_protection_matches_native_logic() {
    let guest = GuestHarness::load(built_guest("rekon_guest_pvc_protection")).unwrap();
    let mut outcomes = std::collections::HashSet::new();
    for input in pvc_inputs() {
        let native = pvc_logic::decide(&input.clone().into());
        let wasm = guest.decide_pvc(input.clone()).unwrap();
        assert_eq!(wasm, native, "input: {input:?}");
        outcomes.insert(format!("{wasm:?}"));
    }
    // The inputs exercise more than one answer.
    assert!(outcomes.len() >= 3, "{outcomes:?}");
}

#[test]
fn resource_claim_matches_native_logic() {
    let guest = GuestHarness::load(built_guest("rekon_guest_resource_claim")).unwrap();
    for n in [0, 1, 4] {
        let input = pod_with_template_claims(n);
        assert_eq!(
            guest.decide_pod(input.clone()).unwrap(),
            claim_logic::decide_pod(&input),
            "pod with {n} template claims"
        );
    }
    let mut done_owner = pod_using("owner", "x");
    done_owner.phase = PodPhase::Failed;
    let mut owned = claim_with_reservations(0);
    owned.claim.meta.owner_references = vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: "owner".into(),
        uid: "uid-owner".into(),
        controller: true,
        block_owner_deletion: true,
    }];
    owned.owner_pod = Some(done_owner);
    let mut unknown = claim_with_reservations(2);
    unknown.reservations[0].pod = PodLookup::Unknown;
    for input in [
        claim_with_reservations(1),
        claim_with_reservations(6),
        owned,
        unknown,
    ] {
        assert_eq!(
            guest.decide_claim(input.clone()).unwrap(),
            claim_logic::decide_claim(&input.clone().into()),
            "input: {input:?}"
        );
    }
}

#[test]
fn the_harness_reports_the_guest_world() {
    let guest = GuestHarness::load(built_guest("rekon_guest_resource_claim")).unwrap();
    assert_eq!(
        guest.guest().world(),
        rekon_runtime::World::of::<rekon_contract::ResourceClaimWorld>()
    );
    assert!(guest.decide_pvc(PvcInput::default()).is_err());
}
