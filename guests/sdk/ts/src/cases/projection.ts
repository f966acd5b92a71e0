/**
 * From the case-file model to what each `rekon:reconcile@0.2.0` decision
 * receives, as the host projects it (the Rust SDK's `projection` module): the
 * pvc decision gets slim pods of the PVC's namespace, the claim-key decision a
 * `pod-state` per pod. Values are in jco's form (camelCase, `{tag, val}`).
 */
import { controller, isDeleting, isScheduled, isShutDown } from "../meta.js";
import type { claim, pvc, types } from "../types.js";

/** The model's pvc-protection input (0.1.0 shape: whole pods, optional live list). */
export interface ModelPvcInput {
  pvc: { meta: types.ObjectMeta };
  cachedPods: types.Pod[];
  livePods?: types.Pod[];
}

export function projectPvcInput(input: ModelPvcInput): pvc.PvcInput {
  const meta = input.pvc.meta;
  // A claimName only means something inside the pod's own namespace.
  const project = (pods: types.Pod[]): pvc.Pod[] =>
    pods.filter((pod) => pod.meta.namespace === meta.namespace).map(projectPvcPod);
  return {
    pvc: {
      name: meta.name,
      uid: meta.uid,
      resourceVersion: meta.resourceVersion,
      deleting: isDeleting(meta),
      finalizers: meta.finalizers,
      controllerUid: controller(meta)?.uid,
    },
    cachedPods: project(input.cachedPods),
    liveListed: input.livePods !== undefined,
    livePods: project(input.livePods ?? []),
  };
}

function projectPvcPod(pod: types.Pod): pvc.Pod {
  return {
    name: pod.meta.name,
    uid: pod.meta.uid,
    scheduled: isScheduled(pod),
    shutDown: isShutDown(pod),
    volumes: pod.volumes.map((volume): pvc.Volume =>
      volume.source.tag === "persistent-volume-claim"
        ? { tag: "claim", val: volume.source.val }
        : { tag: "ephemeral", val: volume.name },
    ),
  };
}

/** The model's claim-key input: whole pods where 0.2.0 sends a `pod-state`. */
export interface ModelClaimInput {
  claim: types.ResourceClaim;
  reservations: {
    consumer: types.ConsumerReference;
    deleted: boolean;
    pod:
      | { tag: "cached"; val: types.Pod }
      | { tag: "live"; val: types.Pod }
      | { tag: "not-found" }
      | { tag: "unknown" };
  }[];
  ownerPod?: types.Pod;
}

export function projectClaimInput(input: ModelClaimInput): claim.ClaimInput {
  return {
    claim: input.claim,
    reservations: input.reservations.map((r) => ({
      consumer: r.consumer,
      deleted: r.deleted,
      pod:
        r.pod.tag === "cached" || r.pod.tag === "live"
          ? { tag: r.pod.tag, val: podState(r.pod.val) }
          : { tag: r.pod.tag },
    })),
    ownerPod: input.ownerPod === undefined ? undefined : podState(input.ownerPod),
  };
}

export function podState(pod: types.Pod): claim.PodState {
  return { uid: pod.meta.uid, phase: pod.phase, deleting: isDeleting(pod.meta), scheduled: isScheduled(pod) };
}
