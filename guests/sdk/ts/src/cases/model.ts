/**
 * The case-file model: the schemas of what case files hold, field for field as
 * the host's model (`rekon_guest::model` and `rekon_guest::ephemeral` in the Rust
 * SDK, serde form). Case inputs are this model; `projection.ts` turns them into
 * what each 0.2.0 decision receives, as the host does.
 */
import {
  bool,
  enumOf,
  list,
  option,
  record,
  s64,
  strictRecord,
  string,
  tuple,
  variant,
  type Schema,
} from "./schema.js";

const pairs = list(tuple(string, string));

export const OwnerReference = record("owner-reference", {
  "api-version": string,
  kind: string,
  name: string,
  uid: string,
  controller: bool,
  "block-owner-deletion": bool,
});

export const ObjectMeta = record("object-meta", {
  namespace: string,
  name: string,
  uid: string,
  "resource-version": string,
  "deletion-timestamp": option(string),
  "deletion-grace-period-seconds": option(s64),
  finalizers: list(string),
  "owner-references": list(OwnerReference),
  labels: pairs,
  annotations: pairs,
});

export const Target = record("target", { name: string, uid: string, "resource-version": string });

export const PodPhase = enumOf("pod-phase", ["pending", "running", "succeeded", "failed", "unknown"]);

export const Pod = record("pod", {
  meta: ObjectMeta,
  "node-name": string,
  phase: PodPhase,
  volumes: list(
    strictRecord("pod-volume", {
      name: string,
      source: variant("volume-source", { "persistent-volume-claim": string, ephemeral: null }),
    }),
  ),
  "resource-claims": list(
    record("pod-resource-claim", {
      name: string,
      "resource-claim-name": option(string),
      "resource-claim-template-name": option(string),
    }),
  ),
  "resource-claim-statuses": list(
    record("pod-resource-claim-status", { name: string, "resource-claim-name": option(string) }),
  ),
});

export const ConsumerReference = record("consumer-reference", {
  "api-group": string,
  resource: string,
  name: string,
  uid: string,
});

export const ResourceClaim = record("resource-claim", {
  meta: ObjectMeta,
  allocated: bool,
  "reserved-for": list(ConsumerReference),
});

export const ResourceClaimTemplate = record("resource-claim-template", {
  meta: ObjectMeta,
  "claim-spec-json": string,
});

// ---- pvc-protection ----

export const PvcInput = record("pvc-input", {
  pvc: record("pvc", { meta: ObjectMeta }),
  "cached-pods": list(Pod),
  "live-pods": option(list(Pod)),
});

export const PvcDecision = variant("pvc-decision", {
  actions: list(variant("pvc-action", { "add-finalizer": Target, "remove-finalizer": Target })),
  "need-live-pods": null,
});

// ---- resource-claim ----

export const PodInput = record("pod-input", {
  pod: Pod,
  claims: list(ResourceClaim),
  "owned-claims": list(ResourceClaim),
  templates: list(ResourceClaimTemplate),
});

export const PodDecision = record("pod-decision", {
  actions: list(
    variant("pod-action", {
      "create-claim": record("new-claim", {
        "pod-claim-name": string,
        "generate-name": string,
        "template-name": string,
        labels: pairs,
        annotations: pairs,
        "owner-references": list(OwnerReference),
        "claim-spec-json": string,
      }),
      "set-claim-statuses": strictRecord("claim-statuses", {
        pod: Target,
        statuses: list(
          strictRecord("desired-claim-status", {
            name: string,
            claim: variant("status-claim", { existing: string, created: null, none: null }),
          }),
        ),
      }),
      reserve: strictRecord("reservation-add", { claim: Target, consumer: ConsumerReference }),
    }),
  ),
  error: option(string),
});

const PodLookup = variant("pod-lookup", { cached: Pod, live: Pod, "not-found": null, unknown: null });

export const ClaimInput = record("claim-input", {
  claim: ResourceClaim,
  reservations: list(record("reservation", { consumer: ConsumerReference, deleted: bool, pod: PodLookup })),
  "owner-pod": option(Pod),
});

export const ClaimDecision = variant("claim-decision", {
  actions: list(
    variant("claim-action", {
      "update-status": strictRecord("status-update", {
        claim: Target,
        "reserved-for": list(ConsumerReference),
        "clear-allocation": bool,
      }),
      "remove-finalizer": strictRecord("finalizer-removal", { claim: Target, finalizer: string }),
      delete: Target,
    }),
  ),
  "need-live-pods": list(string),
});

// ---- ephemeral-volume (the world's own records; no projection) ----

export const VolumeInput = record("volume-input", {
  pod: record("ephemeral-pod", { namespace: string, name: string, uid: string, deleting: bool }),
  volumes: list(
    record("ephemeral-volume", {
      name: string,
      template: record("claim-template", { labels: pairs, annotations: pairs, "spec-json": string }),
      existing: option(
        record("existing-claim", {
          name: string,
          uid: string,
          controller: option(record("controller-ref", { kind: string, name: string, uid: string })),
        }),
      ),
    }),
  ),
});

export const VolumeDecision = record("volume-decision", {
  actions: list(
    variant("volume-action", {
      "create-pvc": string,
      conflict: record("claim-conflict", { volume: string, "claim-name": string, message: string }),
    }),
  ),
});

export type { Schema };
