//! The PVC protection decision (upstream-behaviour §1), as plain Rust over the model.
//!
//! One call decides one PVC key. The decision is two-phase (§1.5): the cached
//! pods from the pod→PVC index are checked first; only when none of them uses
//! the PVC does the guest ask the host for a live pod list, because the cache
//! alone can never prove that a PVC is unused (k/k #75980, #76703).

use rekon_guest::model::{Pod, Pvc, PvcAction, PvcDecision, PvcInput, VolumeSource};

/// The finalizer this controller owns.
pub const FINALIZER: &str = "kubernetes.io/pvc-protection";

/// Decide what to do with one PVC (§1.4).
pub fn decide(input: &PvcInput) -> PvcDecision {
    let pvc = &input.pvc;
    if is_deletion_candidate(pvc) {
        return decide_deletion_candidate(input);
    }
    if needs_finalizer(pvc) {
        return PvcDecision::Actions(vec![PvcAction::AddFinalizer(pvc.meta.target())]);
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
    PvcDecision::Actions(vec![PvcAction::RemoveFinalizer(pvc.meta.target())])
}

/// NeedsFinalizer (§1.1): not deleting and the finalizer is absent.
pub fn needs_finalizer(pvc: &Pvc) -> bool {
    !pvc.meta.is_deleting() && !pvc.meta.has_finalizer(FINALIZER)
}

/// DeletionCandidate (§1.1): deleting and the finalizer is present.
pub fn is_deletion_candidate(pvc: &Pvc) -> bool {
    pvc.meta.is_deleting() && pvc.meta.has_finalizer(FINALIZER)
}

fn any_pod_uses_pvc(pods: &[Pod], pvc: &Pvc) -> bool {
    pods.iter().any(|pod| pod_uses_pvc(pod, pvc))
}

/// PodUsesPVC (§1.2).
///
/// Pods of another namespace never use the PVC: the host should not send them,
/// but a claimName only means something inside the pod's own namespace.
pub fn pod_uses_pvc(pod: &Pod, pvc: &Pvc) -> bool {
    // Unscheduled pods never use a PVC: kubelet only sees scheduled pods, and the
    // scheduler refuses PVCs that are being deleted.
    if !pod.is_scheduled() || pod.meta.namespace != pvc.meta.namespace {
        return false;
    }
    pod.volumes.iter().any(|volume| match &volume.source {
        // The phase is deliberately not consulted: a Succeeded/Failed pod that
        // still exists keeps blocking.
        VolumeSource::PersistentVolumeClaim(claim_name) => *claim_name == pvc.meta.name,
        // A shut-down pod's ephemeral PVC must not block, or the pod's own
        // finalizer and the PVC's would wait for each other.
        VolumeSource::Ephemeral => {
            !pod.is_shut_down()
                && is_ephemeral_claim_name(&pod.meta.name, &volume.name, &pvc.meta.name)
                && pod.controls(&pvc.meta)
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
