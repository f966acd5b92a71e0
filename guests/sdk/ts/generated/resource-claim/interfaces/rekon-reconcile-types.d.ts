/** @module Interface rekon:reconcile/types@0.2.0 **/
/**
 * One entry of `metadata.ownerReferences`.
 */
export interface OwnerReference {
  apiVersion: string,
  kind: string,
  name: string,
  uid: string,
  controller: boolean,
  blockOwnerDeletion: boolean,
}
/**
 * The metadata every projected object carries.
 */
export interface ObjectMeta {
  namespace: string,
  name: string,
  uid: string,
  /**
   * The resourceVersion of the copy the host projected. Actions echo it back.
   */
  resourceVersion: string,
  /**
   * RFC 3339, as the API server wrote it.
   */
  deletionTimestamp?: string,
  deletionGracePeriodSeconds?: bigint,
  finalizers: Array<string>,
  ownerReferences: Array<OwnerReference>,
  labels: Array<[string, string]>,
  annotations: Array<[string, string]>,
}
/**
 * # Variants
 * 
 * ## `"pending"`
 * 
 * ## `"running"`
 * 
 * ## `"succeeded"`
 * 
 * ## `"failed"`
 * 
 * ## `"unknown"`
 */
export type PodPhase = 'pending' | 'running' | 'succeeded' | 'failed' | 'unknown';
/**
 * Where a pod volume gets its claim from. Other volume kinds are not projected.
 */
export type VolumeSource = VolumeSourcePersistentVolumeClaim | VolumeSourceEphemeral;
/**
 * `persistentVolumeClaim.claimName`.
 */
export interface VolumeSourcePersistentVolumeClaim {
  tag: 'persistent-volume-claim',
  val: string,
}
/**
 * An ephemeral volume: its PVC is named `<pod>-<volume>`.
 */
export interface VolumeSourceEphemeral {
  tag: 'ephemeral',
}
export interface PodVolume {
  name: string,
  source: VolumeSource,
}
/**
 * One entry of `pod.spec.resourceClaims`.
 */
export interface PodResourceClaim {
  name: string,
  resourceClaimName?: string,
  resourceClaimTemplateName?: string,
}
/**
 * One entry of `pod.status.resourceClaimStatuses`.
 * `resource-claim-name: none` means "intentionally not created".
 */
export interface PodResourceClaimStatus {
  name: string,
  resourceClaimName?: string,
}
export interface Pod {
  meta: ObjectMeta,
  /**
   * Empty when the pod is not scheduled.
   */
  nodeName: string,
  phase: PodPhase,
  volumes: Array<PodVolume>,
  resourceClaims: Array<PodResourceClaim>,
  resourceClaimStatuses: Array<PodResourceClaimStatus>,
}
/**
 * One entry of `resourceClaim.status.reservedFor`.
 */
export interface ConsumerReference {
  apiGroup: string,
  resource: string,
  name: string,
  uid: string,
}
export interface ResourceClaim {
  meta: ObjectMeta,
  /**
   * `status.allocation` is present.
   */
  allocated: boolean,
  reservedFor: Array<ConsumerReference>,
}
export interface ResourceClaimTemplate {
  meta: ObjectMeta,
  /**
   * `spec.spec` (a ResourceClaimSpec) as JSON. The host copies it verbatim.
   */
  claimSpecJson: string,
}
/**
 * The object an action writes, as the guest saw it. The host's write is
 * conditional on exactly this uid and resourceVersion. When an earlier action
 * of the same decision already wrote this object, the host carries the
 * resourceVersion that write returned (still conditional, never blind).
 */
export interface Target {
  name: string,
  uid: string,
  resourceVersion: string,
}
