/**
 * A `rekon:reconcile/ephemeral-volume` decision module, made by `rekon new`.
 *
 * The sample decision creates nothing. Write yours in `decide`; the host calls
 * it once per pod key, in a fresh instance each time.
 */
import type { volume } from "../rekon-guest/src/index.js";

export function decide(_input: volume.VolumeInput): volume.VolumeDecision {
  return { actions: [] };
}

/** The world's export, under the name jco gives it. */
export const volumeDecider = { decide };
