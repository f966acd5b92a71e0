/** @module Interface rekon:reconcile/pvc-decider@0.2.0 **/
export function decide(input: PvcInput): PvcDecision;
export type Target = import('./rekon-reconcile-types.js').Target;
/**
 * The PVC of the key.
 */
export interface Pvc {
  name: string,
  uid: string,
  /**
   * Echoed back in the actions' target.
   */
  resourceVersion: string,
  /**
   * `metadata.deletionTimestamp` is set.
   */
  deleting: boolean,
  finalizers: Array<string>,
  /**
   * The uid of the PVC's controlling owner reference, if it has one.
   */
  controllerUid?: string,
}
/**
 * Where a pod volume gets its claim from. Other volume kinds are not projected.
 */
export type Volume = VolumeClaim | VolumeEphemeral;
/**
 * `persistentVolumeClaim.claimName`.
 */
export interface VolumeClaim {
  tag: 'claim',
  val: string,
}
/**
 * An ephemeral volume, by volume name: its PVC is `<pod>-<volume>`.
 */
export interface VolumeEphemeral {
  tag: 'ephemeral',
  val: string,
}
/**
 * A pod of the PVC's namespace (the host never sends pods of another one).
 */
export interface Pod {
  name: string,
  uid: string,
  /**
   * `spec.nodeName` is set.
   */
  scheduled: boolean,
  /**
   * Deleting with a grace period of 0: kubelet is done with its volumes.
   */
  shutDown: boolean,
  /**
   * Only the volumes that name a claim, in spec order.
   */
  volumes: Array<Volume>,
}
export interface PvcInput {
  /**
   * The PVC of the key, from the informer cache.
   */
  pvc: Pvc,
  /**
   * Pods the pod->PVC index names for this PVC (informer data, may lag).
   */
  cachedPods: Array<Pod>,
  /**
   * `live-pods` holds every pod of the namespace from a live LIST; false
   * (and `live-pods` empty) until the guest asked for it.
   */
  liveListed: boolean,
  livePods: Array<Pod>,
}
export type PvcAction = PvcActionAddFinalizer | PvcActionRemoveFinalizer;
/**
 * Append `kubernetes.io/pvc-protection` (update with the resourceVersion seen).
 */
export interface PvcActionAddFinalizer {
  tag: 'add-finalizer',
  val: Target,
}
/**
 * Remove `kubernetes.io/pvc-protection`, leaving other finalizers untouched.
 */
export interface PvcActionRemoveFinalizer {
  tag: 'remove-finalizer',
  val: Target,
}
export type PvcDecision = PvcDecisionActions | PvcDecisionNeedLivePods;
/**
 * Apply these actions, in order (empty: nothing to do).
 */
export interface PvcDecisionActions {
  tag: 'actions',
  val: Array<PvcAction>,
}
/**
 * Call again with `live-pods` filled: the cache alone can never prove "unused".
 */
export interface PvcDecisionNeedLivePods {
  tag: 'need-live-pods',
}
