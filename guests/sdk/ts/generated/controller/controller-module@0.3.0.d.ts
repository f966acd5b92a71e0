// world rekon:reconcile/controller-module@0.3.0
export type * as RekonReconcileLog030 from './interfaces/rekon-reconcile-log.js'; // import rekon:reconcile/log@0.3.0
export * as controller from './interfaces/rekon-reconcile-controller.js'; // export rekon:reconcile/controller@0.3.0
