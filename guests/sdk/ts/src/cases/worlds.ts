/**
 * Per world: its name in the WIT package, the interface a guest module exports
 * (jco's name for it) and, per decision named in case files, the exported
 * function, the schemas of its input and result, and the projection from the
 * case-file model to its input.
 */
import * as controller from "./controller-model.js";
import * as model from "./model.js";
import { projectClaimInput, projectPvcInput, type ModelClaimInput, type ModelPvcInput } from "./projection.js";
import type { Schema } from "./schema.js";

export interface Decision {
  /** The function of the exported interface (`decide`, `decidePod`, ...). */
  fn: string;
  input: Schema;
  result: Schema;
  /** Case-file model (decoded) → the decision's 0.2.0 input. */
  project: (input: never) => unknown;
}

export interface World {
  /** The world in `wit/`, as componentize-js names it: `rekon:reconcile/pvc-protection@0.2.0`. */
  witWorld: string;
  /** The export jco expects of a guest module: `pvcDecider`, ... */
  exportName: string;
  decisions: Record<string, Decision>;
}

const identity = (input: never): unknown => input;

export const WORLDS: Record<string, World> = {
  "pvc-protection": {
    witWorld: "rekon:reconcile/pvc-protection@0.2.0",
    exportName: "pvcDecider",
    decisions: {
      decide: {
        fn: "decide",
        input: model.PvcInput,
        result: model.PvcDecision,
        project: (input: ModelPvcInput) => projectPvcInput(input),
      },
    },
  },
  "resource-claim": {
    witWorld: "rekon:reconcile/resource-claim@0.2.0",
    exportName: "claimDecider",
    decisions: {
      "decide-pod": { fn: "decidePod", input: model.PodInput, result: model.PodDecision, project: identity },
      "decide-claim": {
        fn: "decideClaim",
        input: model.ClaimInput,
        result: model.ClaimDecision,
        project: (input: ModelClaimInput) => projectClaimInput(input),
      },
    },
  },
  "ephemeral-volume": {
    witWorld: "rekon:reconcile/ephemeral-volume@0.2.0",
    exportName: "volumeDecider",
    decisions: {
      decide: { fn: "decide", input: model.VolumeInput, result: model.VolumeDecision, project: identity },
    },
  },
  // The generic world (0.3.0): a controller as a module.
  controller: {
    witWorld: "rekon:reconcile/controller@0.3.0",
    exportName: "controllerDecider",
    decisions: {
      describe: { fn: "describe", input: controller.DescribeInput, result: controller.Description, project: identity },
      decide: { fn: "decide", input: controller.Input, result: controller.Decision, project: identity },
    },
  },
};

/** The world of `name`, or an error listing the worlds. */
export function world(name: string): World {
  const found = WORLDS[name];
  if (!found) throw new Error(`unknown world \`${name}\` (one of ${Object.keys(WORLDS).join(", ")})`);
  return found;
}
