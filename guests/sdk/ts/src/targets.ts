/**
 * Targets and finalizers: what every write action names, and the finalizer
 * checks every decision makes (the Rust SDK's `ObjectMeta::target`,
 * `has_finalizer`, `Pvc::target`).
 */
import type { types } from "./types.js";

/** Anything that carries the three fields a target is made of. */
export interface Targetable {
  name: string;
  uid: string;
  resourceVersion: string;
}

/** The object's target as the guest sees it now: the host's write is conditional on it. */
export function target(object: Targetable): types.Target {
  return { name: object.name, uid: object.uid, resourceVersion: object.resourceVersion };
}

/** `finalizer` is among the object's finalizers. */
export function hasFinalizer(object: { finalizers: readonly string[] }, finalizer: string): boolean {
  return object.finalizers.includes(finalizer);
}
