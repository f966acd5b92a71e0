// world rekon:reconcile/controller@0.3.0
export type * as RekonReconcileLog030 from './interfaces/rekon-reconcile-log.js'; // import rekon:reconcile/log@0.3.0
export * as controllerDecider from './interfaces/rekon-reconcile-controller-decider.js'; // export rekon:reconcile/controller-decider@0.3.0
