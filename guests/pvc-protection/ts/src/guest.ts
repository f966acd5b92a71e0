/**
 * The component's entry point: exports the `pvc-decider` interface of world
 * `rekon:reconcile/pvc-protection@0.2.0` (jco names it `pvcDecider`).
 */
import type { pvc } from "../../../sdk/ts/src/index.js";
import { decide } from "./logic.js";

export const pvcDecider: { decide(input: pvc.PvcInput): pvc.PvcDecision } = { decide };
