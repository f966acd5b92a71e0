//! Claim-key decisions (§3.7): `reservedFor` only loses consumers the host
//! confirms gone or done; the allocation, the builtin finalizer and the claim
//! itself are released only when no consumer remains.

use rekon_guest::model::{
    ClaimAction, ClaimInput, ConsumerReference, PodLookup, Reservation, ResourceClaim,
    StatusUpdate, Target,
};

use super::{bounded_consumer, bounded_target};
use crate::resource_claim::DELETE_PROTECTION_FINALIZER;
use crate::validate::{MAX_NAME, Rejected, bounded, check_count, shown, versioned};

/// A status update, a finalizer removal, a delete: upstream's most for one claim.
pub const MAX_ACTIONS: usize = 3;

/// One write of a claim decision, in order. Each is conditional on the
/// resourceVersion the previous write returned (the first: the one seen), the
/// delete also on the claim's uid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimWrite {
    Status {
        reserved_for: Vec<ConsumerReference>,
        clear_allocation: bool,
    },
    RemoveFinalizer(String),
    Delete,
}

/// Validates the whole decision and returns its writes in order.
pub fn plan_claim(
    key: &str,
    input: &ClaimInput,
    actions: &[ClaimAction],
) -> Result<Vec<ClaimWrite>, Rejected> {
    check_count(key, actions.len(), MAX_ACTIONS)?;
    let mut state = State::new(&input.claim);
    actions
        .iter()
        .enumerate()
        .map(|(index, action)| {
            state
                .apply(input, action)
                .map_err(|reason| Rejected::action(key, index, describe(action), reason))
        })
        .collect()
}

fn describe(action: &ClaimAction) -> String {
    match action {
        ClaimAction::UpdateStatus(u) => format!(
            "update-status of claim {} ({} reservedFor entries{})",
            shown(&u.claim.name),
            u.reserved_for.len(),
            if u.clear_allocation {
                ", clear allocation"
            } else {
                ""
            }
        ),
        ClaimAction::RemoveFinalizer(r) => format!(
            "remove-finalizer {} of claim {}",
            shown(&r.finalizer),
            shown(&r.claim.name)
        ),
        ClaimAction::Delete(t) => format!("delete claim {}", shown(&t.name)),
    }
}

/// The claim as the decision's earlier actions leave it.
struct State {
    reserved_for: Vec<ConsumerReference>,
    allocated: bool,
    has_finalizer: bool,
    status_written: bool,
    finalizer_removed: bool,
    deleted: bool,
}

impl State {
    fn new(claim: &ResourceClaim) -> Self {
        Self {
            reserved_for: claim.reserved_for.clone(),
            allocated: claim.allocated,
            has_finalizer: claim.meta.has_finalizer(DELETE_PROTECTION_FINALIZER),
            status_written: false,
            finalizer_removed: false,
            deleted: false,
        }
    }

    fn apply(&mut self, input: &ClaimInput, action: &ClaimAction) -> Result<ClaimWrite, String> {
        let target = match action {
            ClaimAction::UpdateStatus(u) => &u.claim,
            ClaimAction::RemoveFinalizer(r) => &r.claim,
            ClaimAction::Delete(t) => t,
        };
        bounded_target("claim", target)?;
        check_target(&input.claim, target)?;
        if self.deleted {
            return Err("nothing follows a delete".into());
        }
        match action {
            ClaimAction::UpdateStatus(update) => self.update_status(input, update),
            ClaimAction::RemoveFinalizer(removal) => {
                bounded("finalizer", &removal.finalizer, MAX_NAME)?;
                self.remove_finalizer(input, &removal.finalizer)
            }
            ClaimAction::Delete(_) => self.delete(input),
        }
    }

    fn update_status(
        &mut self,
        input: &ClaimInput,
        update: &StatusUpdate,
    ) -> Result<ClaimWrite, String> {
        if self.status_written {
            return Err("a second status update".into());
        }
        for c in &update.reserved_for {
            bounded_consumer(c)?;
        }
        // `update` must be `reservedFor` in order with some entries left out,
        // and only entries the host knows to be gone or done.
        let mut kept = update.reserved_for.iter().peekable();
        let mut dropped = 0;
        for entry in &self.reserved_for {
            if kept.peek() == Some(&entry) {
                kept.next();
            } else if gone_or_done(entry, &input.reservations) {
                dropped += 1;
            } else {
                return Err(format!(
                    "drops consumer {} (uid {}) that the host does not know to be gone or done",
                    entry.name, entry.uid
                ));
            }
        }
        if let Some(extra) = kept.next() {
            return Err(format!(
                "adds or reorders consumer {} (uid {}); reservedFor may only lose entries",
                shown(&extra.name),
                shown(&extra.uid)
            ));
        }
        if update.clear_allocation {
            // 1.31+: the builtin finalizer's owner clears the allocation once
            // the list became empty, or when a deleting claim has no consumer.
            if !update.reserved_for.is_empty() {
                return Err("the allocation of a reserved claim is never cleared".into());
            }
            if !self.has_finalizer {
                return Err(format!(
                    "the allocation is cleared only while {DELETE_PROTECTION_FINALIZER} protects it"
                ));
            }
            if dropped == 0 && !input.claim.meta.is_deleting() {
                return Err(
                    "the allocation of a claim that is neither deleting nor losing consumers is kept"
                        .into(),
                );
            }
        } else if dropped == 0 {
            return Err("the update changes nothing".into());
        }
        self.reserved_for = update.reserved_for.clone();
        self.allocated &= !update.clear_allocation;
        self.status_written = true;
        Ok(ClaimWrite::Status {
            reserved_for: update.reserved_for.clone(),
            clear_allocation: update.clear_allocation,
        })
    }

    fn remove_finalizer(
        &mut self,
        input: &ClaimInput,
        finalizer: &str,
    ) -> Result<ClaimWrite, String> {
        if finalizer != DELETE_PROTECTION_FINALIZER {
            return Err(format!(
                "a claim decision may only remove {DELETE_PROTECTION_FINALIZER}"
            ));
        }
        if !self.has_finalizer || self.finalizer_removed {
            return Err("the claim does not carry the finalizer".into());
        }
        if self.allocated || !self.reserved_for.is_empty() {
            return Err("the finalizer stays while the claim is allocated or reserved".into());
        }
        if !self.status_written && !input.claim.meta.is_deleting() {
            return Err(
                "the finalizer goes only after consumers were dropped or from a deleting claim"
                    .into(),
            );
        }
        self.finalizer_removed = true;
        Ok(ClaimWrite::RemoveFinalizer(finalizer.to_string()))
    }

    fn delete(&mut self, input: &ClaimInput) -> Result<ClaimWrite, String> {
        if !self.reserved_for.is_empty() {
            return Err("a claim with consumers in reservedFor is never deleted".into());
        }
        let claim = &input.claim;
        let Some(owner) = claim.meta.controller().filter(|o| o.is_pod_controller()) else {
            return Err("only a claim controlled by a pod is deleted".into());
        };
        let Some(pod) = &input.owner_pod else {
            return Err(format!("owner pod {} is not in the cache", owner.name));
        };
        if pod.meta.name != owner.name || (pod.meta.uid == owner.uid && !pod.is_done()) {
            return Err(format!(
                "owner pod {} (uid {}) is neither replaced nor done",
                owner.name, owner.uid
            ));
        }
        self.deleted = true;
        Ok(ClaimWrite::Delete)
    }
}

fn check_target(claim: &ResourceClaim, target: &Target) -> Result<(), String> {
    versioned("the claim", &claim.meta.resource_version)?;
    if *target != claim.meta.target() {
        return Err(format!(
            "targets claim {} (uid {}) at resourceVersion {}, not the key's claim at the version seen",
            shown(&target.name),
            shown(&target.uid),
            shown(&target.resource_version)
        ));
    }
    Ok(())
}

/// §3.7 step 2, from the host's own lookups: the pod's UID was seen deleted, a
/// live GET found nothing or another UID, or the cache holds another UID or a
/// done pod. Non-pod consumers are never known gone.
fn gone_or_done(entry: &ConsumerReference, reservations: &[Reservation]) -> bool {
    entry.is_pod()
        && reservations
            .iter()
            .filter(|r| r.consumer == *entry)
            .any(|r| {
                r.deleted
                    || match &r.pod {
                        PodLookup::NotFound => true,
                        PodLookup::Live(pod) => pod.meta.uid != entry.uid,
                        PodLookup::Cached(pod) => pod.meta.uid != entry.uid || pod.is_done(),
                        PodLookup::Unknown => false,
                    }
            })
}

#[cfg(test)]
mod tests;
