/**
 * The PVC protection decision (upstream-behaviour §1) over its
 * `rekon:reconcile@0.2.0` projection: the host sends only pods of the PVC's
 * namespace, each with the volumes that name a claim. The TypeScript twin of
 * `guests/pvc-protection/src/logic.rs`.
 *
 * The decision is two-phase (§1.5): cached pods first; only when none of them
 * uses the PVC does the guest ask for a live pod list, because the cache alone
 * can never prove that a PVC is unused (k/k #75980, #76703).
 */
import { hasFinalizer, target, type pvc } from "../../../sdk/ts/src/index.js";

/** The finalizer this controller owns. */
export const FINALIZER = "kubernetes.io/pvc-protection";

const nothing: pvc.PvcDecision = { tag: "actions", val: [] };

/** Decide what to do with one PVC (§1.4). */
export function decide(input: pvc.PvcInput): pvc.PvcDecision {
  const claim = input.pvc;
  if (isDeletionCandidate(claim)) return decideDeletionCandidate(input);
  if (needsFinalizer(claim)) return { tag: "actions", val: [{ tag: "add-finalizer", val: target(claim) }] };
  return nothing;
}

/** §1.4 step 2 with the two-phase IsBeingUsed of §1.5. */
function decideDeletionCandidate(input: pvc.PvcInput): pvc.PvcDecision {
  // Informer phase: a user found in the cache settles it without a live list.
  if (anyPodUsesPvc(input.cachedPods, input.pvc)) return nothing;
  // Live phase: mandatory before removal (PR #80492).
  if (!input.liveListed) return { tag: "need-live-pods" };
  if (anyPodUsesPvc(input.livePods, input.pvc)) return nothing;
  return { tag: "actions", val: [{ tag: "remove-finalizer", val: target(input.pvc) }] };
}

/** NeedsFinalizer (§1.1): not deleting and the finalizer is absent. */
export function needsFinalizer(claim: pvc.Pvc): boolean {
  return !claim.deleting && !hasFinalizer(claim, FINALIZER);
}

/** DeletionCandidate (§1.1): deleting and the finalizer is present. */
export function isDeletionCandidate(claim: pvc.Pvc): boolean {
  return claim.deleting && hasFinalizer(claim, FINALIZER);
}

function anyPodUsesPvc(pods: pvc.Pod[], claim: pvc.Pvc): boolean {
  return pods.some((pod) => podUsesPvc(pod, claim));
}

/** PodUsesPVC (§1.2), for a pod of the PVC's namespace. */
export function podUsesPvc(pod: pvc.Pod, claim: pvc.Pvc): boolean {
  // Unscheduled pods never use a PVC: kubelet only sees scheduled pods.
  if (!pod.scheduled) return false;
  return pod.volumes.some((volume) => {
    // The phase is deliberately not consulted: a finished pod that still exists keeps blocking.
    if (volume.tag === "claim") return volume.val === claim.name;
    // A shut-down pod's ephemeral PVC must not block, or the pod's own finalizer
    // and the PVC's would wait for each other.
    return !pod.shutDown && claim.name === `${pod.name}-${volume.val}` && claim.controllerUid === pod.uid;
  });
}
