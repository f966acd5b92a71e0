/** @module Interface rekon:reconcile/volume-decider@0.2.0 **/
export function decide(input: VolumeInput): VolumeDecision;
/**
 * `spec.volumes[].ephemeral.volumeClaimTemplate` of one volume.
 */
export interface ClaimTemplate {
  /**
   * `metadata.labels`, sorted by key.
   */
  labels: Array<[string, string]>,
  /**
   * `metadata.annotations`, sorted by key.
   */
  annotations: Array<[string, string]>,
  /**
   * `spec` (a PersistentVolumeClaimSpec) as JSON; the host copies it verbatim
   * into the PVC it creates. Not typed: no decision reads it, and typed records
   * would freeze the contract to one Kubernetes release's PVC spec (every new
   * field a breaking WIT change) or silently drop fields the copy must keep.
   */
  specJson: string,
}
/**
 * The owner reference with `controller: true` of an existing PVC.
 */
export interface ControllerRef {
  kind: string,
  name: string,
  uid: string,
}
/**
 * The PVC named `<pod>-<volume>` in the pod's namespace, from the PVC cache.
 */
export interface ExistingClaim {
  name: string,
  uid: string,
  /**
   * None when no owner reference has `controller: true`.
   */
  controller?: ControllerRef,
}
/**
 * One ephemeral volume of the pod. Other volume kinds are not projected.
 */
export interface EphemeralVolume {
  name: string,
  template: ClaimTemplate,
  /**
   * None when the cache has no PVC `<pod>-<volume>`.
   */
  existing?: ExistingClaim,
}
/**
 * The pod of the key.
 */
export interface EphemeralPod {
  namespace: string,
  name: string,
  uid: string,
  /**
   * `metadata.deletionTimestamp` is set.
   */
  deleting: boolean,
}
export interface VolumeInput {
  pod: EphemeralPod,
  /**
   * The pod's ephemeral volumes, in `spec.volumes` order.
   */
  volumes: Array<EphemeralVolume>,
}
/**
 * A volume whose PVC cannot be created.
 */
export interface ClaimConflict {
  volume: string,
  /**
   * `<pod>-<volume>`.
   */
  claimName: string,
  /**
   * Why, for the Warning Event on the pod.
   */
  message: string,
}
export type VolumeAction = VolumeActionCreatePvc | VolumeActionConflict;
/**
 * Create the PVC of this volume. The host builds it from the pod it
 * projected: name `<pod>-<volume>`, the template's labels, annotations and
 * spec, and one owner reference to the pod (controller, blockOwnerDeletion).
 */
export interface VolumeActionCreatePvc {
  tag: 'create-pvc',
  val: string,
}
/**
 * The volume's PVC exists and is not controlled by the pod, or its name is
 * not a valid object name. The host records a Warning Event on the pod,
 * writes nothing for this volume and retries the key with backoff. Always
 * the last action: like upstream, a decision stops at its first error.
 */
export interface VolumeActionConflict {
  tag: 'conflict',
  val: ClaimConflict,
}
export interface VolumeDecision {
  /**
   * Apply these actions, in order (empty: nothing to do).
   */
  actions: Array<VolumeAction>,
}
