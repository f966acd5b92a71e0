/**
 * The component's entry point: exports the `claim-decider` interface of world
 * `rekon:reconcile/resource-claim@0.2.0` (jco names it `claimDecider`).
 */
import type { claim } from "../../../sdk/ts/src/index.js";
import { decideClaim } from "./claim.js";
import { decidePod } from "./pod.js";

export const claimDecider: {
  decidePod(input: claim.PodInput): claim.PodDecision;
  decideClaim(input: claim.ClaimInput): claim.ClaimDecision;
} = { decidePod, decideClaim };
