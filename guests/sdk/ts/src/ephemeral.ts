/**
 * Helpers of the `ephemeral-volume` world (the Rust SDK's `rekon_guest::ephemeral`).
 */
import type { volume } from "./types.js";

/** EphemeralClaimName (upstream-behaviour §1.1): `<pod>-<volume>`, no suffix. */
export function claimName(pod: volume.EphemeralPod, volumeName: string): string {
  return `${pod.name}-${volumeName}`;
}

/**
 * ControlledBy (upstream-behaviour §1.1): the controlling owner reference carries
 * the pod's UID (the host only looks the PVC up in the pod's namespace).
 */
export function isControlledBy(existing: volume.ExistingClaim, pod: volume.EphemeralPod): boolean {
  return existing.controller !== undefined && existing.controller !== null && existing.controller.uid === pod.uid;
}
