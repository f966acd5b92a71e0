/**
 * The `rekon:reconcile@0.2.0` contract as TypeScript types, generated from `wit/`
 * by `jco types` (see `generated/`, refreshed by `npm run types`).
 *
 * One namespace per interface: `types` (the shared projected objects), and the
 * decision interface of each world (`pvc`, `claim`, `volume`). A guest module
 * exports its world's interface under the name jco gives it (`pvcDecider`,
 * `claimDecider`, `volumeDecider`).
 */
export type * as types from "../generated/resource-claim/interfaces/rekon-reconcile-types.js";
export type * as pvc from "../generated/pvc-protection/interfaces/rekon-reconcile-pvc-decider.js";
export type * as claim from "../generated/resource-claim/interfaces/rekon-reconcile-claim-decider.js";
export type * as volume from "../generated/ephemeral-volume/interfaces/rekon-reconcile-volume-decider.js";
export type * as log from "../generated/resource-claim/interfaces/rekon-reconcile-log.js";

/** The version of the WIT package this SDK targets. */
export const CONTRACT_VERSION = "0.2.0";
