/** @module Interface rekon:reconcile/controller-decider@0.3.0 **/
/**
 * What the module is. Called once at load, before any decision; the host
 * checks it (and the scope against what the operator allows) with the digest.
 */
export function describe(): Description;
export function decide(input: Input): Decision;
/**
 * A Kubernetes kind. `group` is empty for the core API (`""`, `v1`, `Pod`).
 */
export interface Kind {
  group: string,
  version: string,
  kind: string,
}
/**
 * How an event of a watched kind names primary keys, and which of its
 * objects a decision of a primary is given.
 */
export type Mapping = MappingOwner | MappingSameName | MappingFieldIndex | MappingSelector | MappingNamedBy;
/**
 * The primary its owner references name (references of the primary kind).
 */
export interface MappingOwner {
  tag: 'owner',
}
/**
 * The primary of the same namespace and name.
 */
export interface MappingSameName {
  tag: 'same-name',
}
/**
 * The primaries named by the string values at this field path, in the
 * object's namespace (a pod's
 * `spec.volumes[*].persistentVolumeClaim.claimName` names PVCs).
 */
export interface MappingFieldIndex {
  tag: 'field-index',
  val: string,
}
/**
 * The primaries whose label selector at this field path of the primary
 * (a LabelSelector, or a plain map of labels) selects the object, in its
 * namespace (`spec.selector`).
 */
export interface MappingSelector {
  tag: 'selector',
  val: string,
}
/**
 * The primaries whose value at this field path of the primary is the
 * object's name, in its namespace (a Foo's `spec.deploymentName`).
 */
export interface MappingNamedBy {
  tag: 'named-by',
  val: string,
}
/**
 * Another kind the controller watches.
 */
export interface Watch {
  kind: Kind,
  mapping: Mapping,
  /**
   * The field paths of its objects the decision sees.
   */
  fields: Array<string>,
}
/**
 * A kind of child the controller may write. Children are always owned by
 * the primary (a controller owner reference the host sets) and always in
 * the primary's namespace.
 */
export interface ChildScope {
  kind: Kind,
  create: boolean,
  update: boolean,
  'delete': boolean,
}
/**
 * How fresh a live list must be.
 * # Variants
 * 
 * ## `"after-dequeue"`
 * 
 * Issued after the host took the key from its queue (upstream's rule):
 * one list per decision that asks.
 * ## `"after-observed"`
 * 
 * Issued after the host observed the primary copy the decision is on,
 * and after the last event of this kind that mapped to a key of the
 * primary's namespace: the keys of one namespace share one list. Sound
 * only when what such a list can show stops growing once the primary is
 * in the state the module acts on (a deleting PVC gains no new pods).
 */
export type Freshness = 'after-dequeue' | 'after-observed';
/**
 * A kind the controller may ask to read live, and the fields it is given.
 */
export interface ReadScope {
  kind: Kind,
  fields: Array<string>,
  /**
   * For lists; a get is always issued for the decision that asks.
   */
  freshness: Freshness,
  /**
   * A list gives the decision only the objects the module's watch of this
   * kind (it must have exactly one) relates to its primary, as `related`
   * gives the cached ones; false: every object listed.
   */
  relatedOnly: boolean,
}
/**
 * Everything the controller may write or ask for: the host refuses any
 * action outside it, and the operator pins the scope a module may declare.
 */
export interface Scope {
  /**
   * Finalizers it may add to or remove from the primary.
   */
  finalizers: Array<string>,
  /**
   * Label keys it may set or remove on the primary.
   */
  labels: Array<string>,
  /**
   * Annotation keys it may set or remove on the primary.
   */
  annotations: Array<string>,
  /**
   * Field paths under the primary's `status` it may write (`availableReplicas`).
   */
  statusFields: Array<string>,
  /**
   * Whether it may delete the primary.
   */
  deletePrimary: boolean,
  children: Array<ChildScope>,
  /**
   * Reasons of the Events it may record on the primary.
   */
  eventReasons: Array<string>,
  reads: Array<ReadScope>,
}
export interface Description {
  /**
   * The controller's name: `--controllers`, metrics, the journal, Events.
   */
  name: string,
  /**
   * One key per object of this kind.
   */
  primary: Kind,
  /**
   * The field paths of the primary the decision sees.
   */
  primaryFields: Array<string>,
  watches: Array<Watch>,
  scope: Scope,
}
/**
 * The objects of one watched kind its mapping relates to the primary.
 */
export interface Related {
  kind: Kind,
  /**
   * Projected JSON objects, sorted by namespace and name.
   */
  objects: Array<string>,
}
/**
 * Objects of a kind in the primary's namespace (every namespace for a
 * cluster-scoped primary), by label and field selector (empty: all).
 */
export interface ListRequest {
  kind: Kind,
  labelSelector: string,
  fieldSelector: string,
}
/**
 * One object by name, in the primary's namespace.
 */
export interface GetRequest {
  kind: Kind,
  name: string,
}
export type ReadRequest = ReadRequestList | ReadRequestGet;
export interface ReadRequestList {
  tag: 'list',
  val: ListRequest,
}
export interface ReadRequestGet {
  tag: 'get',
  val: GetRequest,
}
export interface ReadResult {
  request: ReadRequest,
  /**
   * Projected JSON objects read live (none for a get of a missing object).
   */
  objects: Array<string>,
}
export interface Input {
  /**
   * The primary, projected JSON, from the host's cache.
   */
  primary: string,
  /**
   * One entry per watched kind, in the description's order.
   */
  related: Array<Related>,
  /**
   * Empty until the decision asked for reads; then the live answers, in order.
   */
  reads: Array<ReadResult>,
  /**
   * The host's clock, the only time a decision sees: RFC 3339 in UTC
   * with milliseconds, `2026-11-26T12:00:00.250Z` (truncated, so never a
   * time that has not come yet). A requeue-after computed from it
   * should round up to the next millisecond, so it never comes early.
   */
  now: string,
}
/**
 * Set (`some`) or remove (`none`) one label or annotation of the primary.
 */
export interface KeyValue {
  key: string,
  value?: string,
}
/**
 * # Variants
 * 
 * ## `"background"`
 * 
 * ## `"foreground"`
 * 
 * ## `"orphan"`
 */
export type Propagation = 'background' | 'foreground' | 'orphan';
/**
 * Delete the primary: preconditions are its uid and this resourceVersion
 * (the one the decision saw, in `input.primary` or a read of it).
 */
export interface PrimaryDeletion {
  resourceVersion: string,
  propagation?: Propagation,
}
/**
 * A child as the decision saw it.
 */
export interface ChildRef {
  kind: Kind,
  name: string,
  uid: string,
  resourceVersion: string,
}
export interface ChildUpdate {
  kind: Kind,
  name: string,
  /**
   * The resourceVersion the decision saw: the update is conditional on it.
   */
  resourceVersion: string,
  /**
   * A JSON merge patch of the child (`{"spec":{"replicas":3}}`).
   */
  patch: string,
}
/**
 * A Kubernetes Event on the primary.
 */
export interface Event {
  warning: boolean,
  reason: string,
  message: string,
}
export type Action = ActionAddFinalizer | ActionRemoveFinalizer | ActionSetLabels | ActionSetAnnotations | ActionPatchStatus | ActionDeletePrimary | ActionCreateChild | ActionUpdateChild | ActionDeleteChild | ActionEvent | ActionRequeueAfter;
export interface ActionAddFinalizer {
  tag: 'add-finalizer',
  val: string,
}
export interface ActionRemoveFinalizer {
  tag: 'remove-finalizer',
  val: string,
}
export interface ActionSetLabels {
  tag: 'set-labels',
  val: Array<KeyValue>,
}
export interface ActionSetAnnotations {
  tag: 'set-annotations',
  val: Array<KeyValue>,
}
/**
 * A JSON merge patch of the primary's `status` (declared fields only),
 * conditional on the resourceVersion of `input.primary`.
 */
export interface ActionPatchStatus {
  tag: 'patch-status',
  val: string,
}
export interface ActionDeletePrimary {
  tag: 'delete-primary',
  val: PrimaryDeletion,
}
/**
 * A JSON object with `apiVersion`, `kind`, `metadata.name` and its
 * content; the host sets the namespace and the owner reference.
 */
export interface ActionCreateChild {
  tag: 'create-child',
  val: string,
}
export interface ActionUpdateChild {
  tag: 'update-child',
  val: ChildUpdate,
}
export interface ActionDeleteChild {
  tag: 'delete-child',
  val: ChildRef,
}
export interface ActionEvent {
  tag: 'event',
  val: Event,
}
/**
 * Decide this key again after this many milliseconds (sooner if an event comes).
 */
export interface ActionRequeueAfter {
  tag: 'requeue-after',
  val: bigint,
}
export type Decision = DecisionActions | DecisionRead;
/**
 * Apply these actions, in order (empty: nothing to do).
 */
export interface DecisionActions {
  tag: 'actions',
  val: Array<Action>,
}
/**
 * Read these live, then call `decide` again with `reads` filled.
 */
export interface DecisionRead {
  tag: 'read',
  val: Array<ReadRequest>,
}
