/**
 * Predicates over the shared projected objects (`types`): the Rust SDK's
 * `model` helpers (`ObjectMeta`, `Pod`, `OwnerReference`, `ConsumerReference`).
 */
import type { claim, types } from "./types.js";

/** `metadata.deletionTimestamp` is set. */
export function isDeleting(meta: types.ObjectMeta): boolean {
  return meta.deletionTimestamp !== undefined && meta.deletionTimestamp !== null;
}

/** The value of annotation `key`, if present. */
export function annotation(meta: types.ObjectMeta, key: string): string | undefined {
  return meta.annotations.find(([k]) => k === key)?.[1];
}

/** The first owner reference with `controller: true`. */
export function controller(meta: types.ObjectMeta): types.OwnerReference | undefined {
  return meta.ownerReferences.find((owner) => owner.controller);
}

/** A controlling owner reference to a core/v1 Pod. */
export function isPodController(owner: types.OwnerReference): boolean {
  return owner.controller && owner.apiVersion === "v1" && owner.kind === "Pod";
}

/** `spec.nodeName` is set. */
export function isScheduled(pod: types.Pod): boolean {
  return pod.nodeName !== "";
}

/** Terminal phase, or deleted while unscheduled (upstream `isPodDone`). */
export function isDone(pod: types.Pod | claim.PodState): boolean {
  const terminal = pod.phase === "succeeded" || pod.phase === "failed";
  if ("meta" in pod) return terminal || (isDeleting(pod.meta) && !isScheduled(pod));
  return terminal || (pod.deleting && !pod.scheduled);
}

/** Kubelet finished, or force-deleted: deletion timestamp with grace 0. */
export function isShutDown(pod: types.Pod): boolean {
  return isDeleting(pod.meta) && pod.meta.deletionGracePeriodSeconds === 0n;
}

/** `object` is in the pod's namespace and controlled by the pod's UID. */
export function controls(pod: types.Pod, object: types.ObjectMeta): boolean {
  return (
    object.namespace === pod.meta.namespace &&
    object.ownerReferences.some((owner) => owner.controller && owner.uid === pod.meta.uid)
  );
}

/** The pod as a `reservedFor` entry. */
export function consumer(pod: types.Pod): types.ConsumerReference {
  return { apiGroup: "", resource: "pods", name: pod.meta.name, uid: pod.meta.uid };
}

/** A `reservedFor` entry that names a core pod. */
export function isPodConsumer(reference: types.ConsumerReference): boolean {
  return reference.apiGroup === "" && reference.resource === "pods";
}
