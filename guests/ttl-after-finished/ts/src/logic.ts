/**
 * kube-controller-manager's TTL-after-finished controller (v1.20,
 * pkg/controller/ttlafterfinished) as a module of the generic `controller`
 * world: a finished Job (condition `Complete` or `Failed` with status "True")
 * with `spec.ttlSecondsAfterFinished` is deleted once the TTL has passed since
 * it finished (the finished condition's `lastTransitionTime`, upstream's
 * `jobFinishTime`).
 *
 * As upstream's `processJob`: the cached Job decides first; until it expires
 * the key is decided again when it will (requeue-after, no polling). When the
 * cache says expired, a fresh read of the Job decides again, and only a fresh
 * copy that still says expired is deleted, with its resourceVersion and
 * foreground propagation (the host adds the uid precondition upstream sets). A
 * Job being deleted, not finished, or without a TTL needs nothing. The time is
 * `input.now` only.
 */
import {
  actions,
  deletePrimary,
  get,
  kind,
  primary,
  read,
  readResult,
  requeueAfter,
  timestamp,
  type ctl,
  type KubeObject,
} from "../../../sdk/ts/src/index.js";

export const JOB = kind("batch", "v1", "Job");
/** What the decision reads of a Job, cached or fresh. */
const FIELDS = ["spec.ttlSecondsAfterFinished", "status.conditions"];

export function describe(): ctl.Description {
  return {
    name: "ttl-after-finished",
    primary: JOB,
    primaryFields: FIELDS,
    watches: [],
    scope: {
      finalizers: [],
      labels: [],
      annotations: [],
      statusFields: [],
      deletePrimary: true,
      children: [],
      eventReasons: [],
      // A get: issued for the decision that asks, whatever the freshness.
      reads: [{ kind: JOB, fields: FIELDS, freshness: "after-dequeue", relatedOnly: false }],
    },
  };
}

export function decide(input: ctl.Input): ctl.Decision {
  const now = timestamp(input.now);
  if (now === undefined) return actions();
  const cached = primary(input);
  const fresh = readResult(input, get(JOB, cached.name));
  if (fresh === undefined) {
    const left = timeLeft(cached, now);
    if (left === undefined) return actions();
    // The cache may be stale (a TTL raised since): confirm on a fresh copy.
    return left > 0 ? actions(requeueAfter(left)) : read(get(JOB, cached.name));
  }
  const job = fresh[0];
  // Gone, or a new Job of the same name: its own events decide it.
  if (job === undefined || job.uid !== cached.uid) return actions();
  const left = timeLeft(job, now);
  if (left === undefined) return actions();
  return left > 0 ? actions(requeueAfter(left)) : actions(deletePrimary(job, "foreground"));
}

/**
 * Upstream's `processTTL` and `timeLeft`: milliseconds until the Job's TTL
 * expires (≤ 0: expired), or `undefined` when it needs no cleanup (being
 * deleted, not finished, no TTL) or its finish time is unknown (upstream
 * reports an error and retries; an update of the Job brings it back here).
 */
export function timeLeft(job: KubeObject, now: number): number | undefined {
  if (job.deleting) return undefined;
  const ttl = job.int("spec.ttlSecondsAfterFinished");
  if (ttl === undefined) return undefined;
  const finished = job.conditions.find((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True");
  if (finished === undefined) return undefined;
  const finishedAt = timestamp(finished.lastTransitionTime);
  if (finishedAt === undefined) return undefined;
  return finishedAt + ttl * 1000 - now;
}
