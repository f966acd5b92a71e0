/**
 * One projected object of the `controller` world, parsed: what a decision
 * reads (the Rust SDK's `rekon_guest::controller::Object`). The host sends
 * JSON text holding the declared field paths, `apiVersion`, `kind` and the
 * identifying metadata; absent fields read as `undefined`, never as errors.
 */

/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A status condition (`metav1.Condition` and the older per-kind ones). */
export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastProbeTime?: string;
  lastUpdateTime?: string;
}

/** An owner reference as the API writes it. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

const isMap = (value: unknown): value is { [key: string]: Json } =>
  typeof value === "object" && value !== null && !Array.isArray(value);

export class KubeObject {
  constructor(readonly value: { [key: string]: Json }) {}

  /** Parses projected JSON text; throws when it is not a JSON object. */
  static parse(text: string): KubeObject {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw new Error(`not JSON: ${(e as Error).message}`);
    }
    if (!isMap(value)) throw new Error(`not a JSON object: ${text.slice(0, 80)}`);
    return new KubeObject(value);
  }

  /** The value at a dotted path (`status.phase`), if present. */
  get(path: string): Json | undefined {
    let at: Json | undefined = this.value;
    for (const part of path.split(".")) {
      if (!isMap(at)) return undefined;
      at = at[part];
    }
    return at;
  }

  /** The string at a dotted path, if it is one. */
  str(path: string): string | undefined {
    const value = this.get(path);
    return typeof value === "string" ? value : undefined;
  }

  /** The integer at a dotted path, if it is one. */
  int(path: string): number | undefined {
    const value = this.get(path);
    return typeof value === "number" && Number.isSafeInteger(value) ? value : undefined;
  }

  get apiVersion(): string {
    return this.str("apiVersion") ?? "";
  }

  get kind(): string {
    return this.str("kind") ?? "";
  }

  get name(): string {
    return this.str("metadata.name") ?? "";
  }

  get namespace(): string {
    return this.str("metadata.namespace") ?? "";
  }

  get uid(): string {
    return this.str("metadata.uid") ?? "";
  }

  get resourceVersion(): string {
    return this.str("metadata.resourceVersion") ?? "";
  }

  /** `metadata.deletionTimestamp` is set. */
  get deleting(): boolean {
    const at = this.get("metadata.deletionTimestamp");
    return at !== undefined && at !== null;
  }

  get finalizers(): string[] {
    return this.strings("metadata.finalizers");
  }

  hasFinalizer(finalizer: string): boolean {
    return this.finalizers.includes(finalizer);
  }

  /** The value of label `key`, if present. */
  label(key: string): string | undefined {
    const labels = this.get("metadata.labels");
    const value = isMap(labels) ? labels[key] : undefined;
    return typeof value === "string" ? value : undefined;
  }

  get ownerReferences(): OwnerReference[] {
    const refs = this.get("metadata.ownerReferences");
    return Array.isArray(refs) ? (refs.filter(isMap) as unknown as OwnerReference[]) : [];
  }

  /** The owner reference with `controller: true`, if any. */
  get controllerRef(): OwnerReference | undefined {
    return this.ownerReferences.find((owner) => owner.controller === true);
  }

  /** Whether a controller owner reference carries `uid`. */
  isControlledBy(uid: string): boolean {
    return this.controllerRef?.uid === uid;
  }

  /** `status.conditions`, those that have a type and a status. */
  get conditions(): Condition[] {
    const list = this.get("status.conditions");
    if (!Array.isArray(list)) return [];
    return list.filter(
      (c): c is { [key: string]: Json } => isMap(c) && typeof c.type === "string" && typeof c.status === "string",
    ) as unknown as Condition[];
  }

  /** The condition of `type`, if present. */
  condition(type: string): Condition | undefined {
    return this.conditions.find((c) => c.type === type);
  }

  /** The condition of `type` is present with status `"True"`. */
  isTrue(type: string): boolean {
    return this.condition(type)?.status === "True";
  }

  private strings(path: string): string[] {
    const list = this.get(path);
    return Array.isArray(list) ? list.filter((v): v is string => typeof v === "string") : [];
  }
}

/**
 * Milliseconds since the epoch of an RFC 3339 time (`input.now`, a condition's
 * `lastTransitionTime`); `undefined` when it is not one.
 */
export function timestamp(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i.test(text)) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}
