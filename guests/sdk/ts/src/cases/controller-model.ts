/**
 * The case-file model of the `controller` world (`rekon:reconcile@0.3.0`),
 * field for field as the Rust SDK's `rekon_guest::controller` in its serde form:
 * every record field may be omitted (its default) but a watch's kind and
 * mapping and a read result's request; objects are JSON text, written in case
 * files as YAML values. The world's own records are what the decision gets:
 * no projection.
 */
import { bool, enumOf, json, list, option, record, string, u64, unit, variant } from "./schema.js";

const strings = list(string);

export const Kind = record("kind", { group: string, version: string, kind: string });

export const Mapping = variant("mapping", {
  owner: null,
  "same-name": null,
  "field-index": string,
  selector: string,
  "named-by": string,
});

export const Description = record("description", {
  name: string,
  primary: Kind,
  "primary-fields": strings,
  watches: list(record("watch", { kind: Kind, mapping: Mapping, fields: strings }, ["kind", "mapping"])),
  scope: record("scope", {
    finalizers: strings,
    labels: strings,
    annotations: strings,
    "status-fields": strings,
    "delete-primary": bool,
    children: list(record("child-scope", { kind: Kind, create: bool, update: bool, delete: bool })),
    "event-reasons": strings,
    reads: list(
      record("read-scope", {
        kind: Kind,
        fields: strings,
        freshness: enumOf("freshness", ["after-dequeue", "after-observed"]),
        "related-only": bool,
      }),
    ),
  }),
});

export const ReadRequest = variant("read-request", {
  list: record("list-request", { kind: Kind, "label-selector": string, "field-selector": string }),
  get: record("get-request", { kind: Kind, name: string }),
});

export const Input = record("input", {
  primary: json,
  related: list(record("related", { kind: Kind, objects: list(json) })),
  reads: list(record("read-result", { request: ReadRequest, objects: list(json) }, ["request"])),
  now: string,
});

const KeyValue = record("key-value", { key: string, value: option(string) });

export const Action = variant("action", {
  "add-finalizer": string,
  "remove-finalizer": string,
  "set-labels": list(KeyValue),
  "set-annotations": list(KeyValue),
  "patch-status": json,
  "delete-primary": record("primary-deletion", {
    "resource-version": string,
    propagation: option(enumOf("propagation", ["background", "foreground", "orphan"])),
  }),
  "create-child": json,
  "update-child": record("child-update", { kind: Kind, name: string, "resource-version": string, patch: json }),
  "delete-child": record("child-ref", { kind: Kind, name: string, uid: string, "resource-version": string }),
  event: record("event", { warning: bool, reason: string, message: string }),
  "requeue-after": u64,
});

export const Decision = variant("decision", { actions: list(Action), read: list(ReadRequest) });

/** `describe` takes nothing: its case input is `null` (or omitted). */
export const DescribeInput = unit;
