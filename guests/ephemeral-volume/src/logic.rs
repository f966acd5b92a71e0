//! The ephemeral volume decision (upstream-behaviour §2), as plain Rust over
//! [`rekon_guest::ephemeral`].
//!
//! One call decides one pod key: every ephemeral volume whose PVC `<pod>-<volume>`
//! is missing gets a `create-pvc`; a PVC of that name the pod does not control is
//! a conflict. Like upstream, the decision stops at its first conflict (the
//! volumes before it are still created, the ones after it wait for the retry).

use rekon_guest::ephemeral::{
    ClaimConflict, EphemeralPod, EphemeralVolume, ExistingClaim, VolumeAction, VolumeDecision,
    VolumeInput,
};

/// The longest object name the API server accepts (a DNS subdomain).
pub const MAX_NAME_LENGTH: usize = 253;

/// Decide which PVCs one pod still needs (§2 step 2).
pub fn decide(input: &VolumeInput) -> VolumeDecision {
    // A deleting pod gets nothing: its PVCs go with it through the garbage collector.
    if input.pod.deleting {
        return VolumeDecision::default();
    }
    let mut actions = Vec::new();
    for volume in &input.volumes {
        match volume_action(&input.pod, volume) {
            Ok(None) => {}
            Ok(Some(create)) => actions.push(create),
            Err(conflict) => {
                actions.push(VolumeAction::Conflict(conflict));
                break;
            }
        }
    }
    VolumeDecision { actions }
}

/// What one volume needs: nothing, its PVC created, or a conflict.
fn volume_action(
    pod: &EphemeralPod,
    volume: &EphemeralVolume,
) -> Result<Option<VolumeAction>, ClaimConflict> {
    let claim_name = pod.claim_name(&volume.name);
    let conflict = |message: String| ClaimConflict {
        volume: volume.name.clone(),
        claim_name: claim_name.clone(),
        message,
    };
    match &volume.existing {
        Some(existing) if existing.is_controlled_by(pod) => Ok(None),
        Some(existing) => Err(conflict(not_owner(pod, &claim_name, existing))),
        // Upstream lets the create fail with 422 and retries; naming the cause
        // here gives the Event a clear message and the API server no doomed write.
        None if claim_name.len() > MAX_NAME_LENGTH => Err(conflict(format!(
            "PVC name for volume {} of pod {}/{} would be {} characters, more than the {MAX_NAME_LENGTH} allowed",
            volume.name,
            pod.namespace,
            pod.name,
            claim_name.len()
        ))),
        None => Ok(Some(VolumeAction::CreatePvc(volume.name.clone()))),
    }
}

/// Upstream's `VolumeIsForPod` message, with who controls the PVC instead.
fn not_owner(pod: &EphemeralPod, claim_name: &str, existing: &ExistingClaim) -> String {
    let holder = match &existing.controller {
        None => "it has no controller".to_owned(),
        Some(c) => format!("it is controlled by {} {} uid {}", c.kind, c.name, c.uid),
    };
    format!(
        "PVC {}/{claim_name} was not created for pod {}/{} uid {} (pod is not owner: {holder})",
        pod.namespace, pod.namespace, pod.name, pod.uid
    )
}

#[cfg(test)]
mod tests;
