use super::*;
use crate::logic::fixtures::*;
use PodLookup::{Cached, Live, NotFound, Unknown};
use rekon_guest::model::{
    ClaimInput, OwnerReference, Pod, PodLookup, PodPhase, Reservation, Target,
};

/// The logic decides on the 0.2.0 projection; these tests build the host's
/// model and project it the way the host does at the boundary.
fn decide_claim(input: &ClaimInput) -> ClaimDecision {
    super::decide_claim(&input.clone().into())
}

fn running(name: &str) -> Pod {
    scheduled(pod(name))
}

fn lookup(pod: &Pod, found: PodLookup) -> Reservation {
    Reservation {
        consumer: pod.consumer(),
        deleted: false,
        pod: found,
    }
}

fn cached(pod: &Pod) -> Reservation {
    lookup(pod, Cached(pod.clone()))
}

/// `seen` is what the host found under the reserved pod's name.
fn cached_as(reserved: &Pod, seen: Pod) -> Reservation {
    lookup(reserved, Cached(seen))
}

fn live_as(reserved: &Pod, seen: Pod) -> Reservation {
    lookup(reserved, Live(seen))
}

fn input(claim: ResourceClaim, reservations: Vec<Reservation>) -> ClaimInput {
    ClaimInput {
        claim,
        reservations,
        owner_pod: None,
    }
}

fn reserved_by(claim: ResourceClaim, pods: &[&Pod]) -> ResourceClaim {
    pods.iter()
        .fold(claim, |claim, pod| reserved_for(claim, pod.consumer()))
}

fn target(claim: &ResourceClaim) -> Target {
    claim.meta.target()
}

fn status(claim: &ResourceClaim, reserved: &[&Pod], clear: bool) -> ClaimAction {
    ClaimAction::UpdateStatus(StatusUpdate {
        claim: target(claim),
        reserved_for: reserved.iter().map(|p| p.consumer()).collect(),
        clear_allocation: clear,
    })
}

fn unfinalize(claim: &ResourceClaim) -> ClaimAction {
    ClaimAction::RemoveFinalizer(FinalizerRemoval {
        claim: target(claim),
        finalizer: DELETE_PROTECTION_FINALIZER.into(),
    })
}

fn actions(actions: Vec<ClaimAction>) -> ClaimDecision {
    ClaimDecision::Actions(actions)
}

fn with_new_uid(mut pod: Pod) -> Pod {
    pod.meta.uid.push_str("-2");
    pod
}

// ---- live lookups ----

#[test]
fn unknown_pod_asks_for_a_live_get() {
    let a = running("a");
    let claim = reserved_by(claim("c"), &[&a]);
    assert_eq!(
        decide_claim(&input(claim, vec![lookup(&a, Unknown)])),
        ClaimDecision::NeedLivePods(vec!["a".into()])
    );
}

#[test]
fn every_unknown_pod_is_asked_for_at_once() {
    let (a, b, c) = (running("a"), running("b"), running("c"));
    let claim = reserved_by(claim("c"), &[&a, &b, &c]);
    let reservations = vec![lookup(&a, Unknown), cached(&b), lookup(&c, Unknown)];
    assert_eq!(
        decide_claim(&input(claim, reservations)),
        ClaimDecision::NeedLivePods(vec!["a".into(), "c".into()])
    );
}

#[test]
fn unknown_wins_over_droppable_entries() {
    let (a, b) = (running("a"), running("b"));
    let claim = reserved_by(claim("c"), &[&a, &b]);
    let reservations = vec![lookup(&a, NotFound), lookup(&b, Unknown)];
    assert_eq!(
        decide_claim(&input(claim, reservations)),
        ClaimDecision::NeedLivePods(vec!["b".into()])
    );
}

#[test]
fn deleted_pod_needs_no_live_get() {
    let a = running("a");
    let claim = reserved_by(claim("c"), &[&a]);
    let mut reservation = lookup(&a, Unknown);
    reservation.deleted = true;
    assert_eq!(
        decide_claim(&input(claim.clone(), vec![reservation])),
        actions(vec![status(&claim, &[], false)])
    );
}

// ---- keeping and dropping pod entries ----

#[test]
fn cached_running_pod_is_kept() {
    let a = running("a");
    let claim = allocated(reserved_by(claim("c"), &[&a]));
    assert_eq!(
        decide_claim(&input(claim, vec![cached(&a)])),
        actions(vec![])
    );
}

#[test]
fn deleted_pod_is_dropped_even_if_cached_alive() {
    let a = running("a");
    let claim = reserved_by(claim("c"), &[&a]);
    let mut reservation = cached(&a);
    reservation.deleted = true;
    assert_eq!(
        decide_claim(&input(claim.clone(), vec![reservation])),
        actions(vec![status(&claim, &[], false)])
    );
}

#[test]
fn cached_pod_of_another_uid_is_dropped() {
    let a = running("a");
    let claim = reserved_by(claim("c"), &[&a]);
    let decision = decide_claim(&input(
        claim.clone(),
        vec![cached_as(&a, with_new_uid(a.clone()))],
    ));
    assert_eq!(decision, actions(vec![status(&claim, &[], false)]));
}

#[test]
fn cached_done_pods_are_dropped() {
    for phase in [PodPhase::Succeeded, PodPhase::Failed] {
        let a = in_phase(running("a"), phase);
        let claim = reserved_by(claim("c"), &[&a]);
        assert_eq!(
            decide_claim(&input(claim.clone(), vec![cached(&a)])),
            actions(vec![status(&claim, &[], false)]),
            "{phase:?}"
        );
    }
}

#[test]
fn cached_pod_deleted_while_unscheduled_is_dropped() {
    let a = pod_deleting(pod("a"));
    let claim = reserved_by(claim("c"), &[&a]);
    assert_eq!(
        decide_claim(&input(claim.clone(), vec![cached(&a)])),
        actions(vec![status(&claim, &[], false)])
    );
}

#[test]
fn cached_terminating_scheduled_pod_is_kept() {
    // A running pod keeps its reservation until it terminates.
    let a = pod_deleting(running("a"));
    let claim = reserved_by(claim("c"), &[&a]);
    assert_eq!(
        decide_claim(&input(claim, vec![cached(&a)])),
        actions(vec![])
    );
}

#[test]
fn live_pod_of_same_uid_is_kept() {
    let a = running("a");
    let claim = reserved_by(claim("c"), &[&a]);
    assert_eq!(
        decide_claim(&input(claim, vec![live_as(&a, a.clone())])),
        actions(vec![])
    );
}

#[test]
fn live_pod_is_kept_even_when_done() {
    // Upstream's live path has no "done" check.
    let a = in_phase(running("a"), PodPhase::Succeeded);
    let claim = reserved_by(claim("c"), &[&a]);
    assert_eq!(
        decide_claim(&input(claim, vec![live_as(&a, a.clone())])),
        actions(vec![])
    );
}

#[test]
fn live_pod_of_another_uid_is_dropped() {
    let a = running("a");
    let claim = reserved_by(claim("c"), &[&a]);
    assert_eq!(
        decide_claim(&input(
            claim.clone(),
            vec![live_as(&a, with_new_uid(a.clone()))]
        )),
        actions(vec![status(&claim, &[], false)])
    );
}

#[test]
fn pod_not_found_live_is_dropped() {
    let a = running("a");
    let claim = reserved_by(claim("c"), &[&a]);
    assert_eq!(
        decide_claim(&input(claim.clone(), vec![lookup(&a, NotFound)])),
        actions(vec![status(&claim, &[], false)])
    );
}

#[test]
fn only_stale_entries_are_dropped_in_order() {
    let (a, b, c) = (running("a"), running("b"), running("c"));
    let claim = reserved_by(claim("c"), &[&a, &b, &c]);
    let reservations = vec![cached(&a), lookup(&b, NotFound), cached(&c)];
    assert_eq!(
        decide_claim(&input(claim.clone(), reservations)),
        actions(vec![status(&claim, &[&a, &c], false)])
    );
}

#[test]
fn non_pod_entries_keep_their_place() {
    let (a, b) = (running("a"), running("b"));
    let job = non_pod_consumer("job");
    let claim = reserved_for(
        reserved_for(reserved_for(claim("c"), a.consumer()), job.clone()),
        b.consumer(),
    );
    let decision = decide_claim(&input(
        claim.clone(),
        vec![lookup(&a, NotFound), cached(&b)],
    ));
    assert_eq!(
        decision,
        actions(vec![ClaimAction::UpdateStatus(StatusUpdate {
            claim: target(&claim),
            reserved_for: vec![job, b.consumer()],
            clear_allocation: false,
        })])
    );
}

#[test]
fn non_pod_entries_alone_change_nothing() {
    let claim = protected(allocated(reserved_for(claim("c"), non_pod_consumer("job"))));
    assert_eq!(decide_claim(&input(claim, vec![])), actions(vec![]));
}

#[test]
fn pod_entry_without_lookup_is_kept() {
    let a = running("a");
    let claim = reserved_by(claim("c"), &[&a]);
    assert_eq!(decide_claim(&input(claim, vec![])), actions(vec![]));
}

// ---- allocation and the builtin finalizer ----

#[test]
fn last_entry_dropped_clears_allocation_and_finalizer() {
    let a = running("a");
    let claim = protected(allocated(reserved_by(claim("c"), &[&a])));
    assert_eq!(
        decide_claim(&input(claim.clone(), vec![lookup(&a, NotFound)])),
        actions(vec![status(&claim, &[], true), unfinalize(&claim)])
    );
}

#[test]
fn allocation_is_kept_without_the_builtin_finalizer() {
    let a = running("a");
    let claim = allocated(reserved_by(claim("c"), &[&a]));
    assert_eq!(
        decide_claim(&input(claim.clone(), vec![lookup(&a, NotFound)])),
        actions(vec![status(&claim, &[], false)])
    );
}

#[test]
fn partial_drop_keeps_allocation_and_finalizer() {
    let (a, b) = (running("a"), running("b"));
    let claim = protected(allocated(reserved_by(claim("c"), &[&a, &b])));
    assert_eq!(
        decide_claim(&input(
            claim.clone(),
            vec![lookup(&a, NotFound), cached(&b)]
        )),
        actions(vec![status(&claim, &[&b], false)])
    );
}

#[test]
fn partial_drop_of_unallocated_claim_removes_finalizer() {
    let (a, b) = (running("a"), running("b"));
    let claim = protected(reserved_by(claim("c"), &[&a, &b]));
    assert_eq!(
        decide_claim(&input(
            claim.clone(),
            vec![lookup(&a, NotFound), cached(&b)]
        )),
        actions(vec![status(&claim, &[&b], false), unfinalize(&claim)])
    );
}

#[test]
fn non_pod_entry_left_keeps_the_allocation() {
    let a = running("a");
    let claim = protected(allocated(reserved_for(
        reserved_by(claim("c"), &[&a]),
        non_pod_consumer("job"),
    )));
    let decision = decide_claim(&input(claim.clone(), vec![lookup(&a, NotFound)]));
    let ClaimDecision::Actions(actions) = decision else {
        panic!("expected actions");
    };
    assert_eq!(actions.len(), 1);
    assert!(
        matches!(&actions[0], ClaimAction::UpdateStatus(s) if !s.clear_allocation && s.reserved_for.len() == 1)
    );
}

#[test]
fn unused_deleting_claim_is_deallocated_then_released() {
    let claim = claim_deleting(protected(allocated(claim("c"))));
    assert_eq!(
        decide_claim(&input(claim.clone(), vec![])),
        actions(vec![status(&claim, &[], true), unfinalize(&claim)])
    );
}

#[test]
fn unused_deleting_unallocated_claim_only_loses_the_finalizer() {
    let claim = claim_deleting(protected(claim("c")));
    assert_eq!(
        decide_claim(&input(claim.clone(), vec![])),
        actions(vec![unfinalize(&claim)])
    );
}

#[test]
fn deleting_claim_still_in_use_is_left_alone() {
    let a = running("a");
    let claim = claim_deleting(protected(allocated(reserved_by(claim("c"), &[&a]))));
    assert_eq!(
        decide_claim(&input(claim, vec![cached(&a)])),
        actions(vec![])
    );
}

#[test]
fn unused_claim_not_deleting_keeps_allocation() {
    let claim = protected(allocated(claim("c")));
    assert_eq!(decide_claim(&input(claim, vec![])), actions(vec![]));
}

#[test]
fn deleting_claim_without_builtin_finalizer_is_left_alone() {
    let mut claim = claim_deleting(allocated(claim("c")));
    claim.meta.finalizers.push("example.com/other".into());
    assert_eq!(decide_claim(&input(claim, vec![])), actions(vec![]));
}

#[test]
fn actions_target_the_claim_as_seen() {
    let claim = claim_deleting(protected(claim("c")));
    let ClaimDecision::Actions(actions) = decide_claim(&input(claim, vec![])) else {
        panic!("expected actions");
    };
    assert_eq!(
        actions,
        vec![ClaimAction::RemoveFinalizer(FinalizerRemoval {
            claim: Target {
                name: "c".into(),
                uid: "c-uid".into(),
                resource_version: "20".into(),
            },
            finalizer: "resource.kubernetes.io/delete-protection".into(),
        })]
    );
}

// ---- deleting generated claims ----

fn generated(owner: &Pod) -> ResourceClaim {
    generated_for(claim("c"), owner, "gpu")
}

fn with_owner(claim: ResourceClaim, owner_pod: Option<Pod>) -> ClaimInput {
    ClaimInput {
        claim,
        reservations: vec![],
        owner_pod,
    }
}

#[test]
fn unreserved_claim_of_done_pod_is_deleted() {
    let owner = in_phase(running("p"), PodPhase::Succeeded);
    let claim = generated(&owner);
    assert_eq!(
        decide_claim(&with_owner(claim.clone(), Some(owner))),
        actions(vec![ClaimAction::Delete(target(&claim))])
    );
}

#[test]
fn unreserved_claim_of_replaced_pod_is_deleted() {
    let owner = running("p");
    let claim = generated(&owner);
    assert_eq!(
        decide_claim(&with_owner(claim.clone(), Some(with_new_uid(owner)))),
        actions(vec![ClaimAction::Delete(target(&claim))])
    );
}

#[test]
fn unreserved_claim_of_pod_deleted_while_unscheduled_is_deleted() {
    let owner = pod_deleting(pod("p"));
    let claim = generated(&owner);
    assert_eq!(
        decide_claim(&with_owner(claim.clone(), Some(owner))),
        actions(vec![ClaimAction::Delete(target(&claim))])
    );
}

#[test]
fn unreserved_claim_of_live_pod_is_kept() {
    let owner = running("p");
    assert_eq!(
        decide_claim(&with_owner(generated(&owner), Some(owner))),
        actions(vec![])
    );
}

#[test]
fn claim_whose_owner_is_not_cached_is_left_to_gc() {
    let owner = in_phase(running("p"), PodPhase::Failed);
    assert_eq!(
        decide_claim(&with_owner(generated(&owner), None)),
        actions(vec![])
    );
}

#[test]
fn claim_without_owner_is_never_deleted() {
    let done = in_phase(running("p"), PodPhase::Failed);
    assert_eq!(
        decide_claim(&with_owner(claim("c"), Some(done))),
        actions(vec![])
    );
}

#[test]
fn non_controller_pod_owner_does_not_count() {
    let done = in_phase(running("p"), PodPhase::Failed);
    let mut claim = generated(&done);
    claim.meta.owner_references[0].controller = false;
    assert_eq!(
        decide_claim(&with_owner(claim, Some(done))),
        actions(vec![])
    );
}

#[test]
fn controller_that_is_not_a_core_pod_does_not_count() {
    let done = in_phase(running("p"), PodPhase::Failed);
    for (api_version, kind) in [("apps/v1", "ReplicaSet"), ("v2", "Pod"), ("v1", "Node")] {
        let mut claim = generated(&done);
        claim.meta.owner_references[0].api_version = api_version.into();
        claim.meta.owner_references[0].kind = kind.into();
        assert_eq!(
            decide_claim(&with_owner(claim, Some(done.clone()))),
            actions(vec![]),
            "{api_version} {kind}"
        );
    }
}

#[test]
fn first_core_pod_controller_is_the_owner() {
    let done = in_phase(running("p"), PodPhase::Failed);
    let mut claim = generated(&done);
    claim.meta.owner_references.insert(
        0,
        OwnerReference {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: "j".into(),
            uid: "j-uid".into(),
            controller: true,
            block_owner_deletion: false,
        },
    );
    assert_eq!(
        decide_claim(&with_owner(claim.clone(), Some(done))),
        actions(vec![ClaimAction::Delete(target(&claim))])
    );
}

#[test]
fn reserved_claim_of_done_pod_is_released_then_deleted() {
    let owner = in_phase(running("p"), PodPhase::Succeeded);
    let claim = protected(allocated(reserved_by(generated(&owner), &[&owner])));
    let input = ClaimInput {
        claim: claim.clone(),
        reservations: vec![cached(&owner)],
        owner_pod: Some(owner),
    };
    assert_eq!(
        decide_claim(&input),
        actions(vec![
            status(&claim, &[], true),
            unfinalize(&claim),
            ClaimAction::Delete(target(&claim)),
        ])
    );
}

#[test]
fn claim_still_reserved_is_not_deleted() {
    let owner = in_phase(running("p"), PodPhase::Succeeded);
    let other = running("q");
    let claim = reserved_by(generated(&owner), &[&other]);
    let input = ClaimInput {
        claim,
        reservations: vec![cached(&other)],
        owner_pod: Some(owner),
    };
    assert_eq!(decide_claim(&input), actions(vec![]));
}

#[test]
fn claim_reserved_by_non_pod_is_not_deleted() {
    let owner = in_phase(running("p"), PodPhase::Succeeded);
    let claim = reserved_for(generated(&owner), non_pod_consumer("job"));
    assert_eq!(
        decide_claim(&with_owner(claim, Some(owner))),
        actions(vec![])
    );
}

#[test]
fn deleting_claim_is_not_deleted_again() {
    let owner = in_phase(running("p"), PodPhase::Succeeded);
    let claim = claim_deleting(protected(generated(&owner)));
    assert_eq!(
        decide_claim(&with_owner(claim.clone(), Some(owner))),
        actions(vec![unfinalize(&claim)])
    );
}
