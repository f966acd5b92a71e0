//! The PVC protection decision (upstream-behaviour §1), as plain Rust over its
//! `rekon:reconcile@0.2.0` projection: the host sends only pods of the PVC's
//! namespace, each with the volumes that name a claim.
//!
//! One call decides one PVC key. The decision is two-phase (§1.5): the cached
//! pods from the pod→PVC index are checked first; only when none of them uses
//! the PVC does the guest ask the host for a live pod list, because the cache
//! alone can never prove that a PVC is unused (k/k #75980, #76703).

use rekon_guest::model::{PvcAction, PvcDecision};
use rekon_guest::projection::pvc::{Pod, Pvc, PvcInput, Volume};

/// The finalizer this controller owns.
pub const FINALIZER: &str = "kubernetes.io/pvc-protection";

/// Decide what to do with one PVC (§1.4).
pub fn decide(input: &PvcInput) -> PvcDecision {
    let pvc = &input.pvc;
    if is_deletion_candidate(pvc) {
        return decide_deletion_candidate(input);
    }
    if needs_finalizer(pvc) {
        return PvcDecision::Actions(vec![PvcAction::AddFinalizer(pvc.target())]);
    }
    PvcDecision::Actions(Vec::new())
}

/// §1.4 step 2 with the two-phase IsBeingUsed of §1.5.
fn decide_deletion_candidate(input: &PvcInput) -> PvcDecision {
    let pvc = &input.pvc;
    // Informer phase: a user found in the cache settles it without a live list.
    if any_pod_uses_pvc(&input.cached_pods, pvc) {
        return PvcDecision::Actions(Vec::new());
    }
    // Live phase: mandatory before removal (PR #80492).
    let Some(live_pods) = &input.live_pods else {
        return PvcDecision::NeedLivePods;
    };
    if any_pod_uses_pvc(live_pods, pvc) {
        return PvcDecision::Actions(Vec::new());
    }
    PvcDecision::Actions(vec![PvcAction::RemoveFinalizer(pvc.target())])
}

/// NeedsFinalizer (§1.1): not deleting and the finalizer is absent.
pub fn needs_finalizer(pvc: &Pvc) -> bool {
    !pvc.deleting && !pvc.has_finalizer(FINALIZER)
}

/// DeletionCandidate (§1.1): deleting and the finalizer is present.
pub fn is_deletion_candidate(pvc: &Pvc) -> bool {
    pvc.deleting && pvc.has_finalizer(FINALIZER)
}

fn any_pod_uses_pvc(pods: &[Pod], pvc: &Pvc) -> bool {
    pods.iter().any(|pod| pod_uses_pvc(pod, pvc))
}

/// PodUsesPVC (§1.2), for a pod of the PVC's namespace.
pub fn pod_uses_pvc(pod: &Pod, pvc: &Pvc) -> bool {
    // Unscheduled pods never use a PVC: kubelet only sees scheduled pods, and the
    // scheduler refuses PVCs that are being deleted.
    if !pod.scheduled {
        return false;
    }
    pod.volumes.iter().any(|volume| match volume {
        // The phase is deliberately not consulted: a Succeeded/Failed pod that
        // still exists keeps blocking.
        Volume::Claim(claim_name) => *claim_name == pvc.name,
        // A shut-down pod's ephemeral PVC must not block, or the pod's own
        // finalizer and the PVC's would wait for each other.
        Volume::Ephemeral(volume_name) => {
            !pod.shut_down
                && is_ephemeral_claim_name(&pod.name, volume_name, &pvc.name)
                && pvc.controller_uid.as_ref() == Some(&pod.uid)
        }
    })
}

/// `<pod>-<volume>` == `pvc_name`, without building the string.
fn is_ephemeral_claim_name(pod_name: &str, volume_name: &str, pvc_name: &str) -> bool {
    pvc_name
        .strip_prefix(pod_name)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|rest| rest == volume_name)
}

#[cfg(test)]
mod tests;
