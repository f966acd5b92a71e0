/**
 * The claim the DRA ResourceClaim controller generates for a pod claim from its
 * template (upstream-behaviour §3.5 step 6): the Rust SDK's
 * `rekon_guest::generated_claim`, rule for rule. The host checks a guest's
 * `create-claim` against that derivation.
 */
import type { claim, types } from "./types.js";

/** Marks a claim as generated for the pod claim named in its value. */
export const POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name";

/** The longest base handed to the API server, which appends five random characters. */
const MAX_BASE_LEN = 57;

/**
 * The claim generated from `template` for `podClaim`: the template's labels, its
 * annotations plus ours (an annotation of the same key is replaced), its spec
 * verbatim, owned by the pod (controller, blockOwnerDeletion).
 */
export function generatedClaim(
  pod: types.Pod,
  podClaim: types.PodResourceClaim,
  template: types.ResourceClaimTemplate,
): claim.NewClaim {
  const annotations: [string, string][] = template.meta.annotations
    .filter(([key]) => key !== POD_CLAIM_NAME_ANNOTATION)
    .map(([key, value]) => [key, value]);
  annotations.push([POD_CLAIM_NAME_ANNOTATION, podClaim.name]);
  return {
    podClaimName: podClaim.name,
    generateName: generateName(pod.meta.name, podClaim.name),
    templateName: template.meta.name,
    labels: template.meta.labels.map(([key, value]) => [key, value]),
    annotations,
    ownerReferences: [
      {
        apiVersion: "v1",
        kind: "Pod",
        name: pod.meta.name,
        uid: pod.meta.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
    claimSpecJson: template.claimSpecJson,
  };
}

/**
 * `<pod>-<pod claim>-`, or, when that is longer than 57 bytes, both parts cut in
 * proportion to their share of the untruncated base and joined by one hyphen,
 * without a trailing hyphen (upstream's rule). Lengths are UTF-8 bytes, as in Go
 * and Rust; a cut never splits a character.
 */
export function generateName(podName: string, podClaimName: string): string {
  const podBytes = utf8Length(podName);
  const claimBytes = utf8Length(podClaimName);
  const baseLen = podBytes + claimBytes + 2;
  if (baseLen <= MAX_BASE_LEN) return `${podName}-${podClaimName}-`;
  const podCut = Math.floor((podBytes * MAX_BASE_LEN) / baseLen);
  const claimCut = Math.floor((claimBytes * MAX_BASE_LEN) / baseLen);
  return `${prefix(podName, podCut)}-${prefix(podClaimName, claimCut)}`;
}

/** The UTF-8 length of `s` in bytes. */
export function utf8Length(s: string): number {
  let bytes = 0;
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return bytes;
}

/** The longest prefix of `s` of at most `maxBytes` UTF-8 bytes. */
function prefix(s: string, maxBytes: number): string {
  let bytes = 0;
  let out = "";
  for (const ch of s) {
    const size = utf8Length(ch);
    if (bytes + size > maxBytes) break;
    bytes += size;
    out += ch;
  }
  return out;
}
