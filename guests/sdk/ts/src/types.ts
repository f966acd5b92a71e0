/**
 * The `rekon:reconcile` contract as TypeScript types, generated from `wit/` by
 * `jco types` (see `generated/`, refreshed by `npm run types`).
 *
 * One namespace per interface: `types` (the shared projected objects of 0.2.0),
 * the decision interface of each 0.2.0 world (`pvc`, `claim`, `volume`), and
 * `ctl`, the generic `controller-decider` interface of 0.3.0. A guest module exports its
 * world's interface under the name jco gives it (`pvcDecider`, `claimDecider`,
 * `volumeDecider`, `controllerDecider`).
 */
export type * as types from "../generated/resource-claim/interfaces/rekon-reconcile-types.js";
export type * as pvc from "../generated/pvc-protection/interfaces/rekon-reconcile-pvc-decider.js";
export type * as claim from "../generated/resource-claim/interfaces/rekon-reconcile-claim-decider.js";
export type * as volume from "../generated/ephemeral-volume/interfaces/rekon-reconcile-volume-decider.js";
export type * as log from "../generated/resource-claim/interfaces/rekon-reconcile-log.js";
export type * as ctl from "../generated/controller/interfaces/rekon-reconcile-controller-decider.js";

/** The version of the WIT package of the dedicated worlds (`pvc`, `claim`, `volume`). */
export const CONTRACT_VERSION = "0.2.0";
/** The version of the WIT package of the generic `controller` world. */
export const CONTROLLER_CONTRACT_VERSION = "0.3.0";
