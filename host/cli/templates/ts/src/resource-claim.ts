/**
 * A `rekon:reconcile/resource-claim` decision module, made by `rekon new`.
 *
 * The sample decisions do nothing: no claim to create for a pod, no change to
 * a claim. Write yours in `decidePod` and `decideClaim`; the host calls them
 * once per key, in a fresh instance each time.
 */
import type { claim } from "../rekon-guest/src/index.js";

export function decidePod(_input: claim.PodInput): claim.PodDecision {
  return { actions: [] };
}

export function decideClaim(_input: claim.ClaimInput): claim.ClaimDecision {
  return { tag: "actions", val: [] };
}

/** The world's export, under the name jco gives it. */
export const claimDecider = { decidePod, decideClaim };
