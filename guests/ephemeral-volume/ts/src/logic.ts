/**
 * The ephemeral volume decision (upstream-behaviour §2): the TypeScript twin of
 * `guests/ephemeral-volume/src/logic.rs`.
 *
 * One call decides one pod key: every ephemeral volume whose PVC `<pod>-<volume>`
 * is missing gets a `create-pvc`; a PVC of that name the pod does not control is
 * a conflict. Like upstream, the decision stops at its first conflict.
 */
import { claimName, isControlledBy, utf8Length, type volume } from "../../../sdk/ts/src/index.js";

/** The longest object name the API server accepts (a DNS subdomain). */
export const MAX_NAME_LENGTH = 253;

/** Decide which PVCs one pod still needs (§2 step 2). */
export function decide(input: volume.VolumeInput): volume.VolumeDecision {
  // A deleting pod gets nothing: its PVCs go with it through the garbage collector.
  if (input.pod.deleting) return { actions: [] };
  const actions: volume.VolumeAction[] = [];
  for (const v of input.volumes) {
    const action = volumeAction(input.pod, v);
    if (action === undefined) continue;
    actions.push(action);
    if (action.tag === "conflict") break;
  }
  return { actions };
}

/** What one volume needs: nothing, its PVC created, or a conflict. */
function volumeAction(pod: volume.EphemeralPod, v: volume.EphemeralVolume): volume.VolumeAction | undefined {
  const name = claimName(pod, v.name);
  const conflict = (message: string): volume.VolumeAction => ({
    tag: "conflict",
    val: { volume: v.name, claimName: name, message },
  });
  const existing = v.existing;
  if (existing !== undefined && existing !== null) {
    return isControlledBy(existing, pod) ? undefined : conflict(notOwner(pod, name, existing));
  }
  // Upstream lets the create fail with 422 and retries; naming the cause here
  // gives the Event a clear message and the API server no doomed write.
  const length = utf8Length(name);
  if (length > MAX_NAME_LENGTH) {
    return conflict(
      `PVC name for volume ${v.name} of pod ${pod.namespace}/${pod.name} would be ${length} characters, ` +
        `more than the ${MAX_NAME_LENGTH} allowed`,
    );
  }
  return { tag: "create-pvc", val: v.name };
}

/** Upstream's `VolumeIsForPod` message, with who controls the PVC instead. */
function notOwner(pod: volume.EphemeralPod, name: string, existing: volume.ExistingClaim): string {
  const c = existing.controller;
  const holder =
    c === undefined || c === null ? "it has no controller" : `it is controlled by ${c.kind} ${c.name} uid ${c.uid}`;
  return (
    `PVC ${pod.namespace}/${name} was not created for pod ${pod.namespace}/${pod.name} uid ${pod.uid} ` +
    `(pod is not owner: ${holder})`
  );
}
