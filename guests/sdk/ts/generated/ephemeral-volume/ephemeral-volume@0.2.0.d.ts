// world rekon:reconcile/ephemeral-volume@0.2.0
export type * as RekonReconcileLog020 from './interfaces/rekon-reconcile-log.js'; // import rekon:reconcile/log@0.2.0
export * as volumeDecider from './interfaces/rekon-reconcile-volume-decider.js'; // export rekon:reconcile/volume-decider@0.2.0
