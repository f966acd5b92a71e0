/**
 * The pod-key decision: syncPod (§3.4), HandleClaim (§3.5), adoption (§3.6).
 * The TypeScript twin of `guests/resource-claim/src/logic/pod.rs`.
 */
import {
  POD_CLAIM_NAME_ANNOTATION,
  annotation,
  consumer,
  controls,
  generatedClaim,
  isDeleting,
  isDone,
  isScheduled,
  target,
  type claim,
  type types,
} from "../../../sdk/ts/src/index.js";

/** Why a pod decision stopped; reported on the pod, the key retried with backoff. */
class PodClaimError extends Error {}

const unsupportedApi = (pod: types.Pod, podClaim: types.PodResourceClaim): PodClaimError =>
  new PodClaimError(
    `pod "${pod.meta.namespace}/${pod.meta.name}", spec.resourceClaim "${podClaim.name}": unsupported API`,
  );
const notCreatedYet = (pod: types.Pod, podClaim: types.PodResourceClaim): PodClaimError =>
  new PodClaimError(
    `pod "${pod.meta.namespace}/${pod.meta.name}", spec.resourceClaim "${podClaim.name}": ResourceClaim not created yet`,
  );
const templateNotFound = (template: string): PodClaimError =>
  new PodClaimError(`resource claim template "${template}": not found`);
const notOwned = (pod: types.Pod, c: types.ResourceClaim): PodClaimError =>
  new PodClaimError(
    `ResourceClaim ${pod.meta.namespace}/${c.meta.name} was not created for pod ${pod.meta.namespace}/${pod.meta.name} (pod is not owner)`,
  );

/** A status entry that differs from the pod's current `resourceClaimStatuses`. */
interface StatusChange {
  podClaim: string;
  /** The adopted claim's name, or `created` for the claim this decision creates. */
  claim: { existing: string } | "created";
}

type Outcome = { nothing: true } | { adopt: string } | { create: claim.NewClaim };

/** Decide what to do for one pod key (§3.4). */
export function decidePod(input: claim.PodInput): claim.PodDecision {
  const pod = input.pod;
  const decision: claim.PodDecision = { actions: [] };
  // Nothing for a deleting pod. Deviation: nor for a done pod (it never runs
  // again; re-creating the claim the claim sync deletes would loop forever).
  if (isDeleting(pod.meta) || isDone(pod)) return decision;

  const changes: StatusChange[] = [];
  let createdAny = false;
  for (const podClaim of pod.resourceClaims) {
    let outcome: Outcome;
    try {
      outcome = handleClaim(input, podClaim);
    } catch (error) {
      // Creates made so far stay and are not recorded: the retry adopts them.
      if (!(error instanceof PodClaimError)) throw error;
      decision.error = error.message;
      return decision;
    }
    if ("adopt" in outcome) {
      // Adopting the claim already recorded is no change.
      const entry = recorded(pod.resourceClaimStatuses, podClaim.name);
      if (!(entry !== undefined && entry.claim === outcome.adopt))
        changes.push({ podClaim: podClaim.name, claim: { existing: outcome.adopt } });
    } else if ("create" in outcome) {
      decision.actions.push({ tag: "create-claim", val: outcome.create });
      changes.push({ podClaim: podClaim.name, claim: "created" });
      createdAny = true;
    }
  }

  if (changes.length > 0) {
    decision.actions.push({
      tag: "set-claim-statuses",
      val: { pod: target(pod.meta), statuses: desiredStatuses(pod, changes) },
    });
  }

  // Only pods created with a nodeName need the controller to reserve. Deviation:
  // never for done pods (k/k #141276). Skipped while claims were created in this
  // pass: their names are not known yet, and the status write requeues the pod.
  if (isScheduled(pod) && !isDone(pod) && !createdAny) {
    try {
      reserve(input, changes, decision.actions);
    } catch (error) {
      if (!(error instanceof PodClaimError)) throw error;
      decision.error = error.message;
    }
  }
  return decision;
}

/** HandleClaim (§3.5) for one pod claim. */
function handleClaim(input: claim.PodInput, podClaim: types.PodResourceClaim): Outcome {
  const pod = input.pod;
  // A direct reference: the user creates that claim, never the controller.
  if (podClaim.resourceClaimName != null) return { nothing: true };
  const templateName = podClaim.resourceClaimTemplateName;
  if (templateName == null) throw unsupportedApi(pod, podClaim);

  const entry = recorded(pod.resourceClaimStatuses, podClaim.name);
  // Null entry: intentionally no claim.
  if (entry !== undefined && entry.claim === undefined) return { nothing: true };
  if (entry !== undefined && entry.claim !== undefined) {
    const existing = findClaim(input.claims, pod, entry.claim);
    if (existing !== undefined && controls(pod, existing.meta)) return { nothing: true };
    // Recorded but deleted, or owned by someone else: generate a new claim below.
  }

  const orphan = findOrphan(pod, input.ownedClaims, podClaim.name);
  if (orphan !== undefined) return { adopt: orphan.meta.name };

  const template = input.templates.find(
    (t) => t.meta.name === templateName && t.meta.namespace === pod.meta.namespace,
  );
  if (template === undefined) throw templateNotFound(templateName);
  return { create: generatedClaim(pod, podClaim, template) };
}

/** The pod's status entry for `podClaim` (`claim` undefined: "intentionally no claim"), if any. */
function recorded(
  statuses: types.PodResourceClaimStatus[],
  podClaim: string,
): { claim: string | undefined } | undefined {
  const entry = statuses.find((s) => s.name === podClaim);
  return entry === undefined ? undefined : { claim: entry.resourceClaimName ?? undefined };
}

function findClaim(claims: types.ResourceClaim[], pod: types.Pod, name: string): types.ResourceClaim | undefined {
  return claims.find((c) => c.meta.name === name && c.meta.namespace === pod.meta.namespace);
}

/** §3.6: the first claim controlled by the pod whose annotation names this pod claim. */
function findOrphan(pod: types.Pod, owned: types.ResourceClaim[], podClaim: string): types.ResourceClaim | undefined {
  return owned.find((c) => annotation(c.meta, POD_CLAIM_NAME_ANNOTATION) === podClaim && controls(pod, c.meta));
}

/**
 * The complete desired `resourceClaimStatuses`: the current entries in their
 * order (none dropped, null entries included — k/k #138408), changed entries
 * replaced, new ones appended.
 */
function desiredStatuses(pod: types.Pod, changes: StatusChange[]): claim.DesiredClaimStatus[] {
  const statuses: claim.DesiredClaimStatus[] = pod.resourceClaimStatuses.map((s) => ({
    name: s.name,
    claim: s.resourceClaimName != null ? { tag: "existing", val: s.resourceClaimName } : { tag: "none" },
  }));
  for (const change of changes) {
    const status: claim.StatusClaim =
      change.claim === "created" ? { tag: "created" } : { tag: "existing", val: change.claim.existing };
    const entry = statuses.find((s) => s.name === change.podClaim);
    if (entry !== undefined) entry.claim = status;
    else statuses.push({ name: change.podClaim, claim: status });
  }
  return statuses;
}

/** §3.4 step 5: reserve allocated claims for a pod scheduled without the scheduler. */
function reserve(input: claim.PodInput, changes: StatusChange[], actions: claim.PodAction[]): void {
  const pod = input.pod;
  for (const podClaim of pod.resourceClaims) {
    const resolved = resolveAfter(pod, changes, podClaim);
    if (resolved === undefined) continue;
    const [name, mustOwn] = resolved;
    // `owned-claims` also holds just-adopted orphans that `claims` cannot contain yet.
    const found = findClaim(input.claims, pod, name) ?? findClaim(input.ownedClaims, pod, name);
    // Not in the informer yet: the claim's own add event brings the pod back.
    if (found === undefined) return;
    if (mustOwn && !controls(pod, found.meta)) throw notOwned(pod, found);
    const reserved = found.reservedFor.some((c) => c.uid === pod.meta.uid);
    // Two pod claims may name the same claim: reserve it once.
    const already = actions.some((a) => a.tag === "reserve" && a.val.claim.name === name);
    if (found.allocated && !reserved && !already) {
      actions.push({ tag: "reserve", val: { claim: target(found.meta), consumer: consumer(pod) } });
    }
  }
}

/** The claim name of `podClaim` after this decision's changes: `[name, mustOwn]`, or undefined for a null entry. */
function resolveAfter(
  pod: types.Pod,
  changes: StatusChange[],
  podClaim: types.PodResourceClaim,
): [string, boolean] | undefined {
  if (podClaim.resourceClaimName != null) return [podClaim.resourceClaimName, false];
  if (podClaim.resourceClaimTemplateName == null) throw unsupportedApi(pod, podClaim);
  const changed = changes.find((c) => c.podClaim === podClaim.name);
  let name: string | undefined;
  if (changed !== undefined) {
    if (changed.claim === "created") throw notCreatedYet(pod, podClaim);
    name = changed.claim.existing;
  } else {
    const entry = recorded(pod.resourceClaimStatuses, podClaim.name);
    if (entry === undefined) throw notCreatedYet(pod, podClaim);
    name = entry.claim;
  }
  return name === undefined ? undefined : [name, true];
}
