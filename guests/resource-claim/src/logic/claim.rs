//! The claim-key decision: syncClaim (§3.7), over its 0.2.0 projection.

use rekon_guest::model::{
    ClaimAction, ClaimDecision, ConsumerReference, FinalizerRemoval, ResourceClaim, StatusUpdate,
};
use rekon_guest::projection::claim::{ClaimInput, PodLookup, Reservation};

use super::DELETE_PROTECTION_FINALIZER;
use PodLookup::{Cached, Live, NotFound, Unknown};

/// Decide what to do for one claim key (§3.7).
pub fn decide_claim(input: &ClaimInput) -> ClaimDecision {
    let claim = &input.claim;

    // The cache lacks some reserved pods: judge them only after a live GET.
    // A pod seen deleted needs no lookup, it is dropped anyway.
    let unknown: Vec<String> = input
        .reservations
        .iter()
        .filter(|r| !r.deleted && r.pod == Unknown)
        .map(|r| r.consumer.name.clone())
        .collect();
    if !unknown.is_empty() {
        return ClaimDecision::NeedLivePods(unknown);
    }

    let keeps = |entry: &ConsumerReference| keeps_entry(entry, &input.reservations);
    let has_finalizer = claim.meta.has_finalizer(DELETE_PROTECTION_FINALIZER);
    let mut actions = Vec::new();
    let reserved_now_empty;

    if claim.reserved_for.iter().all(keeps) {
        reserved_now_empty = claim.reserved_for.is_empty();
        // Nothing to drop; a deleting claim that nobody uses releases its
        // allocation, then the finalizer that protected it.
        if has_finalizer && claim.meta.is_deleting() && reserved_now_empty {
            if claim.allocated {
                actions.push(update_status(claim, Vec::new(), true));
            }
            actions.push(remove_finalizer(claim));
        }
    } else {
        // Non-pod entries keep their place (≥1.34; earlier releases refused them).
        let reserved_for: Vec<ConsumerReference> = claim
            .reserved_for
            .iter()
            .filter(|e| keeps(e))
            .cloned()
            .collect();
        reserved_now_empty = reserved_for.is_empty();
        // Only the builtin finalizer's owner may clear an allocation (1.31+).
        let clear_allocation = reserved_now_empty && has_finalizer;
        actions.push(update_status(claim, reserved_for, clear_allocation));
        // Upstream checks the object the status write returned: still has the
        // finalizer, and no allocation left.
        if has_finalizer && (clear_allocation || !claim.allocated) {
            actions.push(remove_finalizer(claim));
        }
    }

    // Deviation: a claim that is already being deleted is not deleted again;
    // upstream would send a second, no-op delete.
    if reserved_now_empty && !claim.meta.is_deleting() && owner_pod_is_gone_or_done(input) {
        actions.push(ClaimAction::Delete(claim.meta.target()));
    }
    ClaimDecision::Actions(actions)
}

/// Whether a `reservedFor` entry stays (§3.7 step 2).
fn keeps_entry(entry: &ConsumerReference, reservations: &[Reservation]) -> bool {
    if !entry.is_pod() {
        return true;
    }
    match reservations
        .iter()
        .find(|r| r.consumer.uid == entry.uid && r.consumer.name == entry.name)
    {
        Some(reservation) => keeps_reservation(reservation),
        // The host sends one lookup per pod entry; without one there is no
        // evidence the pod is gone, so the reservation is kept.
        None => true,
    }
}

fn keeps_reservation(reservation: &Reservation) -> bool {
    if reservation.deleted {
        return false;
    }
    match &reservation.pod {
        Cached(pod) => pod.uid == reservation.consumer.uid && !pod.is_done(),
        // Upstream keeps a live pod of the same UID without a "done" check.
        Live(pod) => pod.uid == reservation.consumer.uid,
        NotFound => false,
        // Unreachable: `decide_claim` asks for unknown pods first.
        Unknown => true,
    }
}

/// The claim was generated for a pod (first controlling `v1`/`Pod` owner) and
/// that pod, in the informer, is a different incarnation or done. Claims
/// without such an owner, or whose owner the informer lacks, are left to GC.
fn owner_pod_is_gone_or_done(input: &ClaimInput) -> bool {
    let Some(owner) = input
        .claim
        .meta
        .owner_references
        .iter()
        .find(|o| o.is_pod_controller())
    else {
        return false;
    };
    input
        .owner_pod
        .as_ref()
        .is_some_and(|pod| pod.uid != owner.uid || pod.is_done())
}

fn update_status(
    claim: &ResourceClaim,
    reserved_for: Vec<ConsumerReference>,
    clear_allocation: bool,
) -> ClaimAction {
    ClaimAction::UpdateStatus(StatusUpdate {
        claim: claim.meta.target(),
        reserved_for,
        clear_allocation,
    })
}

fn remove_finalizer(claim: &ResourceClaim) -> ClaimAction {
    ClaimAction::RemoveFinalizer(FinalizerRemoval {
        claim: claim.meta.target(),
        finalizer: DELETE_PROTECTION_FINALIZER.to_owned(),
    })
}

#[cfg(test)]
mod tests;
