// world rekon:reconcile/pvc-protection@0.2.0
export type * as RekonReconcileLog020 from './interfaces/rekon-reconcile-log.js'; // import rekon:reconcile/log@0.2.0
export type * as RekonReconcileTypes020 from './interfaces/rekon-reconcile-types.js'; // import rekon:reconcile/types@0.2.0
export * as pvcDecider from './interfaces/rekon-reconcile-pvc-decider.js'; // export rekon:reconcile/pvc-decider@0.2.0
