/**
 * The component's entry point: exports the `volume-decider` interface of world
 * `rekon:reconcile/ephemeral-volume@0.2.0` (jco names it `volumeDecider`).
 */
import type { volume } from "../../../sdk/ts/src/index.js";
import { decide } from "./logic.js";

export const volumeDecider: { decide(input: volume.VolumeInput): volume.VolumeDecision } = { decide };
