/**
 * The component's entry point: exports the `controller` interface of world
 * `rekon:reconcile/controller@0.3.0` (jco names it `controller`).
 */
import type { ctl } from "../../../sdk/ts/src/index.js";
import { decide, describe } from "./logic.js";

export const controller: { describe(): ctl.Description; decide(input: ctl.Input): ctl.Decision } = {
  describe,
  decide,
};
