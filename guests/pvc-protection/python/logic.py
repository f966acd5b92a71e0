"""The PVC protection decision (upstream-behaviour §1) over its
``rekon:reconcile@0.2.0`` projection; the Python twin of
``guests/pvc-protection/src/logic.rs``.

Two-phase (§1.5): cached pods first; only when none of them uses the PVC does
the guest ask for a live pod list, because the cache alone can never prove that
a PVC is unused (k/k #75980, #76703).
"""

from __future__ import annotations

from rekon_guest import has_finalizer, target
from wit_world.exports.pvc_decider import (
    Pod,
    Pvc,
    PvcAction_AddFinalizer,
    PvcAction_RemoveFinalizer,
    PvcDecision,
    PvcDecision_Actions,
    PvcDecision_NeedLivePods,
    PvcInput,
    Volume_Claim,
)

#: The finalizer this controller owns.
FINALIZER = "kubernetes.io/pvc-protection"


def decide(input: PvcInput) -> PvcDecision:
    """Decide what to do with one PVC (§1.4)."""
    pvc = input.pvc
    if is_deletion_candidate(pvc):
        return _decide_deletion_candidate(input)
    if needs_finalizer(pvc):
        return PvcDecision_Actions([PvcAction_AddFinalizer(target(pvc))])
    return PvcDecision_Actions([])


def _decide_deletion_candidate(input: PvcInput) -> PvcDecision:
    # Informer phase: a user found in the cache settles it without a live list.
    if any(pod_uses_pvc(pod, input.pvc) for pod in input.cached_pods):
        return PvcDecision_Actions([])
    # Live phase: mandatory before removal (PR #80492).
    if not input.live_listed:
        return PvcDecision_NeedLivePods()
    if any(pod_uses_pvc(pod, input.pvc) for pod in input.live_pods):
        return PvcDecision_Actions([])
    return PvcDecision_Actions([PvcAction_RemoveFinalizer(target(input.pvc))])


def needs_finalizer(pvc: Pvc) -> bool:
    """NeedsFinalizer (§1.1): not deleting and the finalizer is absent."""
    return not pvc.deleting and not has_finalizer(pvc, FINALIZER)


def is_deletion_candidate(pvc: Pvc) -> bool:
    """DeletionCandidate (§1.1): deleting and the finalizer is present."""
    return pvc.deleting and has_finalizer(pvc, FINALIZER)


def pod_uses_pvc(pod: Pod, pvc: Pvc) -> bool:
    """PodUsesPVC (§1.2), for a pod of the PVC's namespace."""
    # Unscheduled pods never use a PVC: kubelet only sees scheduled pods.
    if not pod.scheduled:
        return False
    for volume in pod.volumes:
        if isinstance(volume, Volume_Claim):
            # The phase is deliberately not consulted: a finished pod that still exists keeps blocking.
            if volume.value == pvc.name:
                return True
        # A shut-down pod's ephemeral PVC must not block, or the pod's own
        # finalizer and the PVC's would wait for each other.
        elif not pod.shut_down and pvc.name == f"{pod.name}-{volume.value}" and pvc.controller_uid == pod.uid:
            return True
    return False
