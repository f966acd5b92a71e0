/**
 * A `rekon:reconcile/pvc-protection` decision module, made by `rekon new`.
 *
 * The sample decision adds the `kubernetes.io/pvc-protection` finalizer to a
 * PVC that lacks it and decides nothing else. Write yours in `decide`; the host
 * calls it once per PVC key, in a fresh instance each time.
 */
import { hasFinalizer, target, type pvc } from "../rekon-guest/src/index.js";

const FINALIZER = "kubernetes.io/pvc-protection";

export function decide(input: pvc.PvcInput): pvc.PvcDecision {
  const claim = input.pvc;
  if (claim.deleting || hasFinalizer(claim, FINALIZER)) return { tag: "actions", val: [] };
  return { tag: "actions", val: [{ tag: "add-finalizer", val: target(claim) }] };
}

/** The world's export, under the name jco gives it. */
export const pvcDecider = { decide };
