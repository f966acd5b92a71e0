/**
 * The component's entry point: exports the `controller-decider` interface of
 * world `rekon:reconcile/controller@0.3.0` (jco names it `controllerDecider`).
 */
import type { ctl } from "../../../sdk/ts/src/index.js";
import { decide, describe } from "./logic.js";

export const controllerDecider: { describe(): ctl.Description; decide(input: ctl.Input): ctl.Decision } = {
  describe,
  decide,
};
