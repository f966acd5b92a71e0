/** @module Interface rekon:reconcile/claim-decider@0.2.0 **/
export function decidePod(input: PodInput): PodDecision;
export function decideClaim(input: ClaimInput): ClaimDecision;
export type Pod = import('./rekon-reconcile-types.js').Pod;
export type PodPhase = import('./rekon-reconcile-types.js').PodPhase;
export type ResourceClaim = import('./rekon-reconcile-types.js').ResourceClaim;
export type ResourceClaimTemplate = import('./rekon-reconcile-types.js').ResourceClaimTemplate;
export type ConsumerReference = import('./rekon-reconcile-types.js').ConsumerReference;
export type OwnerReference = import('./rekon-reconcile-types.js').OwnerReference;
export type Target = import('./rekon-reconcile-types.js').Target;
/**
 * ---- pod key ----
 */
export interface PodInput {
  pod: Pod,
  /**
   * Claims from the informer that the pod names, directly or through its status.
   */
  claims: Array<ResourceClaim>,
  /**
   * Claims controlled by this pod's UID, from the claim mutation cache
   * (informer + just-created claims): the candidates for adoption.
   */
  ownedClaims: Array<ResourceClaim>,
  /**
   * The templates the pod's claims reference that exist in the informer.
   */
  templates: Array<ResourceClaimTemplate>,
}
/**
 * A claim to create from a template. The host creates it with generateName
 * and records the server-assigned name.
 */
export interface NewClaim {
  /**
   * `pod.spec.resourceClaims[].name` this claim is generated for.
   */
  podClaimName: string,
  generateName: string,
  templateName: string,
  labels: Array<[string, string]>,
  annotations: Array<[string, string]>,
  ownerReferences: Array<OwnerReference>,
  /**
   * Copied from the template.
   */
  claimSpecJson: string,
}
/**
 * The claim a status entry names.
 */
export type StatusClaim = StatusClaimExisting | StatusClaimCreated | StatusClaimNone;
/**
 * An existing claim of this name.
 */
export interface StatusClaimExisting {
  tag: 'existing',
  val: string,
}
/**
 * The claim created by this decision's `create-claim` for the same pod claim.
 */
export interface StatusClaimCreated {
  tag: 'created',
}
/**
 * Intentionally no claim.
 */
export interface StatusClaimNone {
  tag: 'none',
}
export interface DesiredClaimStatus {
  name: string,
  claim: StatusClaim,
}
/**
 * The complete `status.resourceClaimStatuses` of the pod (never a partial list).
 */
export interface ClaimStatuses {
  pod: Target,
  statuses: Array<DesiredClaimStatus>,
}
/**
 * Append `consumer` to the claim's `status.reservedFor`.
 */
export interface ReservationAdd {
  claim: Target,
  consumer: ConsumerReference,
}
export type PodAction = PodActionCreateClaim | PodActionSetClaimStatuses | PodActionReserve;
export interface PodActionCreateClaim {
  tag: 'create-claim',
  val: NewClaim,
}
export interface PodActionSetClaimStatuses {
  tag: 'set-claim-statuses',
  val: ClaimStatuses,
}
export interface PodActionReserve {
  tag: 'reserve',
  val: ReservationAdd,
}
export interface PodDecision {
  /**
   * Apply these actions in order.
   */
  actions: Array<PodAction>,
  /**
   * Set when the decision stopped on an error (reported on the pod, key retried
   * with backoff) after the actions above.
   */
  error?: string,
}
/**
 * ---- claim key ----
 * What the claim decisions read of a pod.
 */
export interface PodState {
  uid: string,
  phase: PodPhase,
  /**
   * `metadata.deletionTimestamp` is set.
   */
  deleting: boolean,
  /**
   * `spec.nodeName` is set.
   */
  scheduled: boolean,
}
/**
 * What the host knows of a pod named in `reservedFor`.
 */
export type PodLookup = PodLookupCached | PodLookupLive | PodLookupNotFound | PodLookupUnknown;
/**
 * From the informer cache.
 */
export interface PodLookupCached {
  tag: 'cached',
  val: PodState,
}
/**
 * From a live GET the guest asked for.
 */
export interface PodLookupLive {
  tag: 'live',
  val: PodState,
}
/**
 * A live GET answered 404.
 */
export interface PodLookupNotFound {
  tag: 'not-found',
}
/**
 * Not in the cache and not yet looked up live.
 */
export interface PodLookupUnknown {
  tag: 'unknown',
}
export interface Reservation {
  consumer: ConsumerReference,
  /**
   * The pod UID was seen in a delete event (bounded memory).
   */
  deleted: boolean,
  pod: PodLookup,
}
export interface ClaimInput {
  claim: ResourceClaim,
  /**
   * One entry per `reservedFor` entry of resource `pods` in the core group.
   */
  reservations: Array<Reservation>,
  /**
   * The pod named by the claim's controlling owner reference, from the informer.
   */
  ownerPod?: PodState,
}
/**
 * Status write: `reservedFor` replaced by `reserved-for`, allocation cleared if asked.
 */
export interface StatusUpdate {
  claim: Target,
  reservedFor: Array<ConsumerReference>,
  clearAllocation: boolean,
}
/**
 * Metadata update removing one finalizer.
 */
export interface FinalizerRemoval {
  claim: Target,
  finalizer: string,
}
export type ClaimAction = ClaimActionUpdateStatus | ClaimActionRemoveFinalizer | ClaimActionDelete;
export interface ClaimActionUpdateStatus {
  tag: 'update-status',
  val: StatusUpdate,
}
export interface ClaimActionRemoveFinalizer {
  tag: 'remove-finalizer',
  val: FinalizerRemoval,
}
/**
 * Delete the claim with uid + resourceVersion preconditions.
 */
export interface ClaimActionDelete {
  tag: 'delete',
  val: Target,
}
export type ClaimDecision = ClaimDecisionActions | ClaimDecisionNeedLivePods;
export interface ClaimDecisionActions {
  tag: 'actions',
  val: Array<ClaimAction>,
}
/**
 * Call again after a live GET of these pods (by name) that the cache lacks.
 */
export interface ClaimDecisionNeedLivePods {
  tag: 'need-live-pods',
  val: Array<string>,
}
