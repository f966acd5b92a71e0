// world rekon:reconcile/resource-claim@0.2.0
export type * as RekonReconcileLog020 from './interfaces/rekon-reconcile-log.js'; // import rekon:reconcile/log@0.2.0
export type * as RekonReconcileTypes020 from './interfaces/rekon-reconcile-types.js'; // import rekon:reconcile/types@0.2.0
export * as claimDecider from './interfaces/rekon-reconcile-claim-decider.js'; // export rekon:reconcile/claim-decider@0.2.0
