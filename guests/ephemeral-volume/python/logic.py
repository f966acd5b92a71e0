"""The ephemeral volume decision (upstream-behaviour §2); the Python twin of
``guests/ephemeral-volume/src/logic.rs``.

One call decides one pod key: every ephemeral volume whose PVC ``<pod>-<volume>``
is missing gets a ``create-pvc``; a PVC of that name the pod does not control is
a conflict. Like upstream, the decision stops at its first conflict.
"""

from __future__ import annotations

from typing import Optional

from rekon_guest import claim_name
from wit_world.exports.volume_decider import (
    ClaimConflict,
    EphemeralPod,
    EphemeralVolume,
    ExistingClaim,
    VolumeAction,
    VolumeAction_Conflict,
    VolumeAction_CreatePvc,
    VolumeDecision,
    VolumeInput,
)

#: The longest object name the API server accepts (a DNS subdomain).
MAX_NAME_LENGTH = 253


def decide(input: VolumeInput) -> VolumeDecision:
    """Decide which PVCs one pod still needs (§2 step 2)."""
    # A deleting pod gets nothing: its PVCs go with it through the garbage collector.
    if input.pod.deleting:
        return VolumeDecision(actions=[])
    actions: list[VolumeAction] = []
    for volume in input.volumes:
        action = _volume_action(input.pod, volume)
        if action is None:
            continue
        actions.append(action)
        if isinstance(action, VolumeAction_Conflict):
            break
    return VolumeDecision(actions=actions)


def is_controlled_by(existing: ExistingClaim, pod: EphemeralPod) -> bool:
    """ControlledBy (§1.1): the controlling owner reference carries the pod's UID."""
    return existing.controller is not None and existing.controller.uid == pod.uid


def _volume_action(pod: EphemeralPod, volume: EphemeralVolume) -> Optional[VolumeAction]:
    name = claim_name(pod.name, volume.name)

    def conflict(message: str) -> VolumeAction:
        return VolumeAction_Conflict(ClaimConflict(volume=volume.name, claim_name=name, message=message))

    if volume.existing is not None:
        if is_controlled_by(volume.existing, pod):
            return None
        return conflict(_not_owner(pod, name, volume.existing))
    # Upstream lets the create fail with 422 and retries; naming the cause here
    # gives the Event a clear message and the API server no doomed write.
    length = len(name.encode())
    if length > MAX_NAME_LENGTH:
        return conflict(
            f"PVC name for volume {volume.name} of pod {pod.namespace}/{pod.name} would be {length} characters, "
            f"more than the {MAX_NAME_LENGTH} allowed"
        )
    return VolumeAction_CreatePvc(volume.name)


def _not_owner(pod: EphemeralPod, name: str, existing: ExistingClaim) -> str:
    """Upstream's ``VolumeIsForPod`` message, with who controls the PVC instead."""
    c = existing.controller
    holder = "it has no controller" if c is None else f"it is controlled by {c.kind} {c.name} uid {c.uid}"
    return (
        f"PVC {pod.namespace}/{name} was not created for pod {pod.namespace}/{pod.name} uid {pod.uid} "
        f"(pod is not owner: {holder})"
    )
