/**
 * The component's entry point: exports the `controller-decider` interface of
 * world `rekon:reconcile/controller@0.3.0` (jco names it `controllerDecider`).
 * The host calls `describe` once at load and `decide` once per App key, in a
 * fresh instance each time.
 */
import type { ctl } from "../rekon-guest/src/index.js";
import { decide, describe } from "./logic.js";

export const controllerDecider: { describe(): ctl.Description; decide(input: ctl.Input): ctl.Decision } = {
  describe,
  decide,
};
