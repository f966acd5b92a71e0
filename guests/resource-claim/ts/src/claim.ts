/**
 * The claim-key decision: syncClaim (§3.7) over its 0.2.0 projection. The
 * TypeScript twin of `guests/resource-claim/src/logic/claim.rs`.
 */
import {
  hasFinalizer,
  isDeleting,
  isDone,
  isPodConsumer,
  isPodController,
  target,
  type claim,
  type types,
} from "../../../sdk/ts/src/index.js";

/** The builtin finalizer the scheduler sets before it writes an allocation. */
export const DELETE_PROTECTION_FINALIZER = "resource.kubernetes.io/delete-protection";

/** Decide what to do for one claim key (§3.7). */
export function decideClaim(input: claim.ClaimInput): claim.ClaimDecision {
  const c = input.claim;
  // The cache lacks some reserved pods: judge them only after a live GET.
  // A pod seen deleted needs no lookup, it is dropped anyway.
  const unknown = input.reservations.filter((r) => !r.deleted && r.pod.tag === "unknown").map((r) => r.consumer.name);
  if (unknown.length > 0) return { tag: "need-live-pods", val: unknown };

  const keeps = (entry: types.ConsumerReference): boolean => keepsEntry(entry, input.reservations);
  const finalizer = hasFinalizer(c.meta, DELETE_PROTECTION_FINALIZER);
  const actions: claim.ClaimAction[] = [];
  let reservedNowEmpty: boolean;

  if (c.reservedFor.every(keeps)) {
    reservedNowEmpty = c.reservedFor.length === 0;
    // A deleting claim nobody uses releases its allocation, then the finalizer.
    if (finalizer && isDeleting(c.meta) && reservedNowEmpty) {
      if (c.allocated) actions.push(updateStatus(c, [], true));
      actions.push(removeFinalizer(c));
    }
  } else {
    // Non-pod entries keep their place (≥1.34).
    const reservedFor = c.reservedFor.filter(keeps);
    reservedNowEmpty = reservedFor.length === 0;
    // Only the builtin finalizer's owner may clear an allocation (1.31+).
    const clearAllocation = reservedNowEmpty && finalizer;
    actions.push(updateStatus(c, reservedFor, clearAllocation));
    if (finalizer && (clearAllocation || !c.allocated)) actions.push(removeFinalizer(c));
  }

  // Deviation: a claim already being deleted is not deleted again.
  if (reservedNowEmpty && !isDeleting(c.meta) && ownerPodIsGoneOrDone(input)) {
    actions.push({ tag: "delete", val: target(c.meta) });
  }
  return { tag: "actions", val: actions };
}

/** Whether a `reservedFor` entry stays (§3.7 step 2). */
function keepsEntry(entry: types.ConsumerReference, reservations: claim.Reservation[]): boolean {
  if (!isPodConsumer(entry)) return true;
  const reservation = reservations.find((r) => r.consumer.uid === entry.uid && r.consumer.name === entry.name);
  // Without a lookup there is no evidence the pod is gone: kept.
  if (reservation === undefined) return true;
  if (reservation.deleted) return false;
  const pod = reservation.pod;
  switch (pod.tag) {
    case "cached":
      return pod.val.uid === reservation.consumer.uid && !isDone(pod.val);
    case "live":
      // Upstream keeps a live pod of the same UID without a "done" check.
      return pod.val.uid === reservation.consumer.uid;
    case "not-found":
      return false;
    case "unknown":
      // Unreachable: decideClaim asks for unknown pods first.
      return true;
  }
}

/** The claim's controlling pod owner, in the informer, is another incarnation or done. */
function ownerPodIsGoneOrDone(input: claim.ClaimInput): boolean {
  const owner = input.claim.meta.ownerReferences.find(isPodController);
  if (owner === undefined) return false;
  const pod = input.ownerPod;
  return pod != null && (pod.uid !== owner.uid || isDone(pod));
}

function updateStatus(
  c: types.ResourceClaim,
  reservedFor: types.ConsumerReference[],
  clearAllocation: boolean,
): claim.ClaimAction {
  return { tag: "update-status", val: { claim: target(c.meta), reservedFor, clearAllocation } };
}

function removeFinalizer(c: types.ResourceClaim): claim.ClaimAction {
  return { tag: "remove-finalizer", val: { claim: target(c.meta), finalizer: DELETE_PROTECTION_FINALIZER } };
}
