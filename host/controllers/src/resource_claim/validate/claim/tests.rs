use rekon_guest::model::{
    FinalizerRemoval, ObjectMeta, OwnerReference, Pod, PodPhase, StatusUpdate,
};

use super::*;

const KEY: &str = "claim:ns/c";

fn pod(name: &str, uid: &str, phase: PodPhase) -> Pod {
    Pod {
        meta: ObjectMeta {
            namespace: "ns".into(),
            name: name.into(),
            uid: uid.into(),
            ..Default::default()
        },
        node_name: "node-a".into(),
        phase,
        ..Default::default()
    }
}

fn consumer(name: &str) -> ConsumerReference {
    ConsumerReference {
        resource: "pods".into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        ..Default::default()
    }
}

fn reservation(name: &str, deleted: bool, pod: PodLookup) -> Reservation {
    Reservation {
        consumer: consumer(name),
        deleted,
        pod,
    }
}

/// Claim `c`, allocated, protected by the builtin finalizer, generated for pod
/// `owner`, reserved for the pods of `reservations` in order.
fn input(reservations: Vec<Reservation>) -> ClaimInput {
    let claim = ResourceClaim {
        meta: ObjectMeta {
            namespace: "ns".into(),
            name: "c".into(),
            uid: "uid-c".into(),
            resource_version: "7".into(),
            finalizers: vec![DELETE_PROTECTION_FINALIZER.into()],
            owner_references: vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: "owner".into(),
                uid: "uid-owner".into(),
                controller: true,
                block_owner_deletion: true,
            }],
            ..Default::default()
        },
        allocated: true,
        reserved_for: reservations.iter().map(|r| r.consumer.clone()).collect(),
    };
    ClaimInput {
        claim,
        reservations,
        owner_pod: Some(pod("owner", "uid-owner", PodPhase::Running)),
    }
}

fn running(name: &str) -> Reservation {
    reservation(
        name,
        false,
        PodLookup::Cached(pod(name, &format!("uid-{name}"), PodPhase::Running)),
    )
}

fn gone(name: &str) -> Reservation {
    reservation(name, false, PodLookup::NotFound)
}

fn update(i: &ClaimInput, keep: &[&str], clear_allocation: bool) -> ClaimAction {
    ClaimAction::UpdateStatus(StatusUpdate {
        claim: i.claim.meta.target(),
        reserved_for: keep.iter().map(|n| consumer(n)).collect(),
        clear_allocation,
    })
}

fn remove_finalizer(i: &ClaimInput) -> ClaimAction {
    ClaimAction::RemoveFinalizer(FinalizerRemoval {
        claim: i.claim.meta.target(),
        finalizer: DELETE_PROTECTION_FINALIZER.into(),
    })
}

fn delete(i: &ClaimInput) -> ClaimAction {
    ClaimAction::Delete(i.claim.meta.target())
}

#[track_caller]
fn reason(i: &ClaimInput, actions: &[ClaimAction], index: usize) -> String {
    crate::validate::rejected_at(plan_claim(KEY, i, actions), KEY, index)
}

// ---- reservedFor ----

#[test]
fn consumers_the_host_knows_gone_or_done_are_dropped() {
    let other_uid = pod("b", "uid-b-new", PodPhase::Running);
    let dropped = [
        reservation(
            "a",
            true,
            PodLookup::Cached(pod("a", "uid-a", PodPhase::Running)),
        ),
        gone("a"),
        reservation(
            "a",
            false,
            PodLookup::Cached(pod("a", "uid-a", PodPhase::Succeeded)),
        ),
        reservation("a", false, PodLookup::Cached(other_uid.clone())),
        reservation("a", false, PodLookup::Live(other_uid)),
    ];
    for r in dropped {
        let i = input(vec![running("keep"), r.clone()]);
        let plan = plan_claim(KEY, &i, &[update(&i, &["keep"], false)]);
        assert_eq!(
            plan,
            Ok(vec![ClaimWrite::Status {
                reserved_for: vec![consumer("keep")],
                clear_allocation: false
            }]),
            "{r:?}"
        );
    }
}

#[test]
fn consumers_not_known_gone_are_never_dropped() {
    let kept = [
        running("a"),
        // A live pod of the same UID is kept without a "done" check (§3.7).
        reservation(
            "a",
            false,
            PodLookup::Live(pod("a", "uid-a", PodPhase::Succeeded)),
        ),
        reservation("a", false, PodLookup::Unknown),
    ];
    for r in kept {
        let i = input(vec![r.clone(), gone("b")]);
        let msg = reason(&i, &[update(&i, &[], false)], 0);
        assert!(msg.contains("consumer a"), "{r:?}: {msg}");
    }
    // A non-pod consumer, and a pod entry the host sent no lookup for.
    let mut i = input(vec![gone("b")]);
    let mut other = consumer("x");
    other.api_group = "example.com".into();
    other.resource = "things".into();
    i.claim.reserved_for.insert(0, other);
    i.claim.reserved_for.push(consumer("unlooked"));
    assert!(reason(&i, &[update(&i, &["unlooked"], false)], 0).contains("consumer x"));
    let keeps_x = ClaimAction::UpdateStatus(StatusUpdate {
        claim: i.claim.meta.target(),
        reserved_for: vec![i.claim.reserved_for[0].clone()],
        clear_allocation: false,
    });
    assert!(reason(&i, &[keeps_x], 0).contains("consumer unlooked"));
}

#[test]
fn reserved_for_never_gains_or_reorders_entries() {
    let i = input(vec![running("a"), running("b"), gone("c")]);
    assert!(reason(&i, &[update(&i, &["a", "b", "d"], false)], 0).contains("only lose"));
    // Reordering drops a consumer from its place.
    assert!(reason(&i, &[update(&i, &["b", "a"], false)], 0).contains("drops consumer a"));
    assert!(reason(&i, &[update(&i, &["a", "b", "c"], false)], 0).contains("changes nothing"));
}

#[test]
fn the_allocation_is_cleared_only_when_nobody_is_left_under_the_finalizer() {
    let i = input(vec![running("a"), gone("b")]);
    assert!(reason(&i, &[update(&i, &["a"], true)], 0).contains("reserved claim"));

    let i = input(vec![gone("b")]);
    assert!(plan_claim(KEY, &i, &[update(&i, &[], true)]).is_ok());

    let mut unprotected = input(vec![gone("b")]);
    unprotected.claim.meta.finalizers.clear();
    assert!(reason(&unprotected, &[update(&unprotected, &[], true)], 0).contains("protects"));

    // Nothing dropped: only a deleting claim releases its allocation.
    let idle = input(vec![]);
    assert!(reason(&idle, &[update(&idle, &[], true)], 0).contains("neither deleting"));
    let mut deleting = input(vec![]);
    deleting.claim.meta.deletion_timestamp = Some("t".into());
    assert!(plan_claim(KEY, &deleting, &[update(&deleting, &[], true)]).is_ok());
}

// ---- finalizer ----

#[test]
fn the_finalizer_goes_after_the_allocation_and_the_last_consumer() {
    let i = input(vec![gone("b")]);
    let plan = plan_claim(KEY, &i, &[update(&i, &[], true), remove_finalizer(&i)]).unwrap();
    assert_eq!(
        plan[1],
        ClaimWrite::RemoveFinalizer(DELETE_PROTECTION_FINALIZER.into())
    );

    let r = reason(&i, &[update(&i, &[], false), remove_finalizer(&i)], 1);
    assert!(r.contains("allocated"), "{r}");
    let r = reason(&i, &[remove_finalizer(&i)], 0);
    assert!(r.contains("allocated or reserved"), "{r}");

    let mut deleting = input(vec![]);
    deleting.claim.meta.deletion_timestamp = Some("t".into());
    deleting.claim.allocated = false;
    assert!(plan_claim(KEY, &deleting, &[remove_finalizer(&deleting)]).is_ok());
}

#[test]
fn only_the_builtin_finalizer_of_a_claim_being_released_goes() {
    let mut idle = input(vec![]);
    idle.claim.allocated = false;
    let r = reason(&idle, &[remove_finalizer(&idle)], 0);
    assert!(r.contains("deleting"), "{r}");

    let mut deleting = idle.clone();
    deleting.claim.meta.deletion_timestamp = Some("t".into());
    let mut other = remove_finalizer(&deleting);
    if let ClaimAction::RemoveFinalizer(r) = &mut other {
        r.finalizer = "example.com/other".into();
    }
    assert!(reason(&deleting, &[other], 0).contains("may only remove"));
    let twice = [remove_finalizer(&deleting), remove_finalizer(&deleting)];
    assert!(reason(&deleting, &twice, 1).contains("does not carry"));
    deleting.claim.meta.finalizers.clear();
    assert!(reason(&deleting, &[remove_finalizer(&deleting)], 0).contains("does not carry"));
}

// ---- delete ----

#[test]
fn a_claim_of_a_done_or_replaced_owner_is_deleted_once_unreserved() {
    let mut done = input(vec![gone("b")]);
    done.owner_pod = Some(pod("owner", "uid-owner", PodPhase::Succeeded));
    let plan = plan_claim(
        KEY,
        &done,
        &[
            update(&done, &[], true),
            remove_finalizer(&done),
            delete(&done),
        ],
    )
    .unwrap();
    assert_eq!(plan.last(), Some(&ClaimWrite::Delete));

    let mut replaced = input(vec![]);
    replaced.owner_pod = Some(pod("owner", "uid-new-owner", PodPhase::Running));
    assert_eq!(
        plan_claim(KEY, &replaced, &[delete(&replaced)]),
        Ok(vec![ClaimWrite::Delete])
    );
}

#[test]
fn a_claim_is_never_deleted_for_a_running_unknown_or_missing_owner_or_while_reserved() {
    let running_owner = input(vec![]);
    assert!(
        reason(&running_owner, &[delete(&running_owner)], 0).contains("neither replaced nor done")
    );

    let mut uncached = input(vec![]);
    uncached.owner_pod = None;
    assert!(reason(&uncached, &[delete(&uncached)], 0).contains("not in the cache"));

    let mut unowned = input(vec![]);
    unowned.claim.meta.owner_references[0].kind = "ReplicaSet".into();
    assert!(reason(&unowned, &[delete(&unowned)], 0).contains("controlled by a pod"));

    let mut reserved = input(vec![running("a")]);
    reserved.owner_pod = Some(pod("owner", "uid-owner", PodPhase::Failed));
    assert!(reason(&reserved, &[delete(&reserved)], 0).contains("never deleted"));
}

#[test]
fn a_valid_first_action_does_not_save_an_invalid_second_one() {
    // Dropping `b` is fine; deleting the claim of a running owner is not: the
    // whole decision is refused, so not even the status update is planned.
    let i = input(vec![gone("b")]);
    let r = reason(&i, &[update(&i, &[], true), delete(&i)], 1);
    assert!(r.contains("neither replaced nor done"), "{r}");
}

#[test]
fn nothing_follows_a_delete() {
    let mut i = input(vec![]);
    i.owner_pod = Some(pod("owner", "uid-owner", PodPhase::Succeeded));
    assert!(reason(&i, &[delete(&i), delete(&i)], 1).contains("follows a delete"));
}

// ---- target and bounds ----

#[test]
fn every_action_targets_the_keys_claim_at_the_version_seen() {
    let i = input(vec![gone("b")]);
    for forge in [
        (|t: &mut Target| t.name = "other".into()) as fn(&mut Target),
        |t| t.uid = "uid-other".into(),
        |t| t.resource_version = "6".into(),
    ] {
        let mut t = i.claim.meta.target();
        forge(&mut t);
        let forged = ClaimAction::UpdateStatus(StatusUpdate {
            claim: t,
            reserved_for: vec![],
            clear_allocation: true,
        });
        assert!(reason(&i, &[forged], 0).contains("not the key's claim"));
    }
}

#[test]
fn more_than_three_actions_are_rejected_whole() {
    let i = input(vec![gone("b")]);
    let err = plan_claim(KEY, &i, &vec![update(&i, &[], true); 4]).unwrap_err();
    assert_eq!(err.action, None);
    assert!(err.reason.contains("at most 3"), "{err}");
    assert!(reason(&i, &[update(&i, &[], true), update(&i, &[], true)], 1).contains("second"));
}

#[test]
fn oversized_consumers_are_rejected() {
    let i = input(vec![gone("b")]);
    let mut huge = consumer("b");
    huge.name = "n".repeat(MAX_NAME + 1);
    let forged = ClaimAction::UpdateStatus(StatusUpdate {
        claim: i.claim.meta.target(),
        reserved_for: vec![huge],
        clear_allocation: false,
    });
    assert!(reason(&i, &[forged], 0).contains("consumer name is"));
}

// ---- issue 18: never unconditional ----

#[test]
fn a_claim_seen_without_a_resource_version_is_never_written() {
    let mut i = input(vec![running("keep"), gone("a")]);
    i.claim.meta.resource_version.clear();
    let r = reason(&i, &[update(&i, &["keep"], false)], 0);
    assert!(r.contains("empty resourceVersion"), "{r}");
    let r = reason(&i, &[remove_finalizer(&i)], 0);
    assert!(r.contains("empty resourceVersion"), "{r}");
}
