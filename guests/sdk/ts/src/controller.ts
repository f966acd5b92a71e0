/**
 * Helpers of the generic `controller` world (0.3.0): the objects of an input
 * parsed, and the decisions and actions built in jco's form (`{tag, val}`,
 * JSON text, `bigint` milliseconds), so a guest reads like its upstream logic.
 */
import { KubeObject } from "./object.js";
import type { ctl } from "./types.js";

export function kind(group: string, version: string, kindName: string): ctl.Kind {
  return { group, version, kind: kindName };
}

/** `v1` or `group/version`, as objects carry it in `apiVersion`. */
export function apiVersion(of: ctl.Kind): string {
  return of.group === "" ? of.version : `${of.group}/${of.version}`;
}

export function sameKind(a: ctl.Kind, b: ctl.Kind): boolean {
  return a.group === b.group && a.version === b.version && a.kind === b.kind;
}

/** The primary of the input. */
export function primary(input: ctl.Input): KubeObject {
  return KubeObject.parse(input.primary);
}

/** The objects the `index`-th watch of the description relates to the primary. */
export function related(input: ctl.Input, index: number): KubeObject[] {
  const entry = input.related[index];
  if (entry === undefined) throw new Error(`the input has no related objects of watch ${index}`);
  return entry.objects.map((text) => KubeObject.parse(text));
}

/** A live read of one object by name, in the primary's namespace. */
export function get(of: ctl.Kind, name: string): ctl.ReadRequest {
  return { tag: "get", val: { kind: of, name } };
}

/** A live list, by label and field selector (empty: all). */
export function list(of: ctl.Kind, labelSelector = "", fieldSelector = ""): ctl.ReadRequest {
  return { tag: "list", val: { kind: of, labelSelector, fieldSelector } };
}

function sameRequest(a: ctl.ReadRequest, b: ctl.ReadRequest): boolean {
  if (a.tag === "get" && b.tag === "get") return sameKind(a.val.kind, b.val.kind) && a.val.name === b.val.name;
  if (a.tag === "list" && b.tag === "list")
    return (
      sameKind(a.val.kind, b.val.kind) &&
      a.val.labelSelector === b.val.labelSelector &&
      a.val.fieldSelector === b.val.fieldSelector
    );
  return false;
}

/**
 * The objects a live read answered (empty: a get found nothing), or
 * `undefined` while the decision has not asked for it yet.
 */
export function readResult(input: ctl.Input, request: ctl.ReadRequest): KubeObject[] | undefined {
  const result = input.reads.find((r) => sameRequest(r.request, request));
  return result?.objects.map((text) => KubeObject.parse(text));
}

/** Apply these actions, in order (none: nothing to do). */
export function actions(...list: ctl.Action[]): ctl.Decision {
  return { tag: "actions", val: list };
}

/** Read these live, then decide again with `input.reads` filled. */
export function read(...requests: ctl.ReadRequest[]): ctl.Decision {
  return { tag: "read", val: requests };
}

/** Decide this key again after `ms` milliseconds (whole, at least 0). */
export function requeueAfter(ms: number): ctl.Action {
  return { tag: "requeue-after", val: BigInt(Math.max(0, Math.ceil(ms))) };
}

/** An Event on the primary. */
export function event(reason: string, message: string, warning = false): ctl.Action {
  return { tag: "event", val: { warning, reason, message } };
}

/** A JSON merge patch of the primary's `status` (declared fields only). */
export function patchStatus(patch: object): ctl.Action {
  return { tag: "patch-status", val: JSON.stringify(patch) };
}

/** A child to create (`apiVersion`, `kind`, `metadata.name`, content); the host sets namespace and owner. */
export function createChild(object: object): ctl.Action {
  return { tag: "create-child", val: JSON.stringify(object) };
}

/** A JSON merge patch of a child, conditional on the resourceVersion the decision saw. */
export function updateChild(of: ctl.Kind, child: KubeObject, patch: object): ctl.Action {
  return {
    tag: "update-child",
    val: { kind: of, name: child.name, resourceVersion: child.resourceVersion, patch: JSON.stringify(patch) },
  };
}

/** Delete the primary as seen at `seen` (its resourceVersion is the precondition). */
export function deletePrimary(seen: KubeObject, propagation?: ctl.Propagation): ctl.Action {
  return { tag: "delete-primary", val: { resourceVersion: seen.resourceVersion, propagation } };
}
