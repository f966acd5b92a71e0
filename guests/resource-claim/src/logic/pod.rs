//! The pod-key decision: syncPod (§3.4), HandleClaim (§3.5), adoption (§3.6).

use rekon_guest::model::{
    ClaimStatuses, DesiredClaimStatus, NewClaim, Pod, PodAction, PodDecision, PodInput,
    PodResourceClaim, ReservationAdd, ResourceClaim, StatusClaim,
};

use super::POD_CLAIM_NAME_ANNOTATION;
use rekon_guest::generated_claim::generated_claim;

/// Why a pod decision stopped. Reported on the pod; the key is retried with backoff.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodClaimError {
    #[error("pod \"{namespace}/{pod}\", spec.resourceClaim \"{pod_claim}\": unsupported API")]
    UnsupportedApi {
        namespace: String,
        pod: String,
        pod_claim: String,
    },
    #[error(
        "pod \"{namespace}/{pod}\", spec.resourceClaim \"{pod_claim}\": ResourceClaim not created yet"
    )]
    NotCreatedYet {
        namespace: String,
        pod: String,
        pod_claim: String,
    },
    #[error("resource claim template \"{template}\": not found")]
    TemplateNotFound { template: String },
    #[error(
        "ResourceClaim {namespace}/{claim} was not created for pod {namespace}/{pod} (pod is not owner)"
    )]
    NotOwned {
        namespace: String,
        claim: String,
        pod: String,
    },
}

impl PodClaimError {
    fn unsupported_api(pod: &Pod, pod_claim: &PodResourceClaim) -> Self {
        Self::UnsupportedApi {
            namespace: pod.meta.namespace.clone(),
            pod: pod.meta.name.clone(),
            pod_claim: pod_claim.name.clone(),
        }
    }

    fn not_created_yet(pod: &Pod, pod_claim: &PodResourceClaim) -> Self {
        Self::NotCreatedYet {
            namespace: pod.meta.namespace.clone(),
            pod: pod.meta.name.clone(),
            pod_claim: pod_claim.name.clone(),
        }
    }

    fn not_owned(pod: &Pod, claim: &ResourceClaim) -> Self {
        Self::NotOwned {
            namespace: pod.meta.namespace.clone(),
            claim: claim.meta.name.clone(),
            pod: pod.meta.name.clone(),
        }
    }
}

/// Decide what to do for one pod key (§3.4).
pub fn decide_pod(input: &PodInput) -> PodDecision {
    let pod = &input.pod;
    let mut decision = PodDecision::default();
    // No claims are ever created (or reserved) for a deleting pod. Deviation:
    // nor for a done pod — it never runs again, and re-creating the generated
    // claim that the claim sync deletes for done pods would loop forever.
    if pod.meta.is_deleting() || pod.is_done() {
        return decision;
    }

    // HandleClaim for every pod claim, remembering status entries that change.
    let mut changes: Vec<StatusChange<'_>> = Vec::new();
    let mut created_any = false;
    for pod_claim in &pod.resource_claims {
        match handle_claim(input, pod_claim) {
            Ok(Outcome::Nothing) => {}
            Ok(Outcome::Adopt(name)) => {
                // Adopting the claim already recorded is no change.
                if recorded(&pod.resource_claim_statuses, &pod_claim.name) != Some(Some(name)) {
                    changes.push(StatusChange {
                        pod_claim: &pod_claim.name,
                        claim: Resolved::Existing(name),
                    });
                }
            }
            Ok(Outcome::Create(new_claim)) => {
                decision.actions.push(PodAction::CreateClaim(new_claim));
                changes.push(StatusChange {
                    pod_claim: &pod_claim.name,
                    claim: Resolved::Created,
                });
                created_any = true;
            }
            Err(error) => {
                // Like upstream, creates made so far stay and are not recorded in
                // this pass: the retry finds them as orphans and adopts them.
                decision.error = Some(error.to_string());
                return decision;
            }
        }
    }

    if !changes.is_empty() {
        decision
            .actions
            .push(PodAction::SetClaimStatuses(ClaimStatuses {
                pod: pod.meta.target(),
                statuses: desired_statuses(pod, &changes),
            }));
    }

    // The scheduler reserves for pods it schedules; only pods created with a
    // nodeName need the controller. Deviation: never for done pods (open upstream
    // issue #141276 re-adds terminal pods that syncClaim just removed). Skipped
    // while claims were created in this pass: their names are not known until the
    // host creates them, and the pod status write requeues the pod anyway.
    if pod.is_scheduled()
        && !pod.is_done()
        && !created_any
        && let Err(error) = reserve(input, &changes, &mut decision.actions)
    {
        decision.error = Some(error.to_string());
    }
    decision
}

/// What HandleClaim decided for one pod claim.
enum Outcome<'a> {
    Nothing,
    /// Record this existing claim (an orphan generated for this pod claim).
    Adopt(&'a str),
    Create(NewClaim),
}

/// A status entry that differs from the pod's current `resourceClaimStatuses`.
struct StatusChange<'a> {
    pod_claim: &'a str,
    claim: Resolved<'a>,
}

enum Resolved<'a> {
    Existing(&'a str),
    Created,
}

/// HandleClaim (§3.5) for one pod claim.
fn handle_claim<'a>(
    input: &'a PodInput,
    pod_claim: &'a PodResourceClaim,
) -> Result<Outcome<'a>, PodClaimError> {
    let pod = &input.pod;
    let template_name = match (
        &pod_claim.resource_claim_name,
        &pod_claim.resource_claim_template_name,
    ) {
        // A direct reference: the user creates that claim, never the controller.
        (Some(_), _) => return Ok(Outcome::Nothing),
        (None, Some(template_name)) => template_name,
        (None, None) => return Err(PodClaimError::unsupported_api(pod, pod_claim)),
    };

    match recorded(&pod.resource_claim_statuses, &pod_claim.name) {
        // Null entry: intentionally no claim.
        Some(None) => return Ok(Outcome::Nothing),
        Some(Some(name))
            if find_claim(&input.claims, pod, name)
                .is_some_and(|claim| pod.controls(&claim.meta)) =>
        {
            return Ok(Outcome::Nothing);
        }
        // Recorded but deleted (upstream row `recreate`) or owned by someone
        // else: a new claim is generated below.
        Some(Some(_)) | None => {}
    }

    if let Some(orphan) = find_orphan(pod, &input.owned_claims, &pod_claim.name) {
        return Ok(Outcome::Adopt(&orphan.meta.name));
    }

    let template = input
        .templates
        .iter()
        .find(|t| t.meta.name == *template_name && t.meta.namespace == pod.meta.namespace)
        .ok_or_else(|| PodClaimError::TemplateNotFound {
            template: template_name.clone(),
        })?;
    Ok(Outcome::Create(generated_claim(pod, pod_claim, template)))
}

/// The pod's status entry for `pod_claim`: `None` when absent, `Some(None)` when
/// it says "intentionally no claim".
fn recorded<'a>(
    statuses: &'a [rekon_guest::model::PodResourceClaimStatus],
    pod_claim: &str,
) -> Option<Option<&'a str>> {
    statuses
        .iter()
        .find(|s| s.name == pod_claim)
        .map(|s| s.resource_claim_name.as_deref())
}

fn find_claim<'a>(claims: &'a [ResourceClaim], pod: &Pod, name: &str) -> Option<&'a ResourceClaim> {
    claims
        .iter()
        .find(|c| c.meta.name == name && c.meta.namespace == pod.meta.namespace)
}

/// §3.6 (1.31+): the first claim controlled by the pod whose annotation names this
/// pod claim. Unannotated claims are never adopted.
fn find_orphan<'a>(
    pod: &Pod,
    owned_claims: &'a [ResourceClaim],
    pod_claim: &str,
) -> Option<&'a ResourceClaim> {
    owned_claims.iter().find(|claim| {
        claim.meta.annotation(POD_CLAIM_NAME_ANNOTATION) == Some(pod_claim)
            && pod.controls(&claim.meta)
    })
}

/// The complete desired `resourceClaimStatuses`: the pod's current entries in
/// their order (none dropped, null entries included — k/k #138408 lost entries by
/// applying only the new ones), changed entries replaced, new ones appended.
fn desired_statuses(pod: &Pod, changes: &[StatusChange<'_>]) -> Vec<DesiredClaimStatus> {
    let mut statuses: Vec<DesiredClaimStatus> = pod
        .resource_claim_statuses
        .iter()
        .map(|s| DesiredClaimStatus {
            name: s.name.clone(),
            claim: match &s.resource_claim_name {
                Some(name) => StatusClaim::Existing(name.clone()),
                None => StatusClaim::None,
            },
        })
        .collect();
    for change in changes {
        let claim = match change.claim {
            Resolved::Existing(name) => StatusClaim::Existing(name.to_owned()),
            Resolved::Created => StatusClaim::Created,
        };
        match statuses.iter_mut().find(|s| s.name == change.pod_claim) {
            Some(entry) => entry.claim = claim,
            None => statuses.push(DesiredClaimStatus {
                name: change.pod_claim.to_owned(),
                claim,
            }),
        }
    }
    statuses
}

/// §3.4 step 5: reserve allocated claims for a pod scheduled without the
/// scheduler. Names resolve through the statuses as written by this decision.
fn reserve(
    input: &PodInput,
    changes: &[StatusChange<'_>],
    actions: &mut Vec<PodAction>,
) -> Result<(), PodClaimError> {
    let pod = &input.pod;
    for pod_claim in &pod.resource_claims {
        let (name, must_own) = match resolve_after(pod, changes, pod_claim)? {
            Some(resolved) => resolved,
            None => continue,
        };
        // `owned-claims` also holds just-adopted orphans that `claims` (the
        // claims the pod's old status names) cannot contain yet.
        let Some(claim) = find_claim(&input.claims, pod, name)
            .or_else(|| find_claim(&input.owned_claims, pod, name))
        else {
            // Not in the informer yet: upstream returns success immediately, the
            // claim's own add event brings the pod back.
            return Ok(());
        };
        if must_own && !pod.controls(&claim.meta) {
            return Err(PodClaimError::not_owned(pod, claim));
        }
        let reserved = claim.reserved_for.iter().any(|c| c.uid == pod.meta.uid);
        // Two pod claims may name the same claim: reserve it once.
        if claim.allocated && !reserved && !reserves(actions, name) {
            actions.push(PodAction::Reserve(ReservationAdd {
                claim: claim.meta.target(),
                consumer: pod.consumer(),
            }));
        }
    }
    Ok(())
}

/// The claim name of `pod_claim` after this decision's status changes (§3.1):
/// `Some((name, must_own))`, or `None` for a null entry.
fn resolve_after<'a>(
    pod: &'a Pod,
    changes: &[StatusChange<'a>],
    pod_claim: &'a PodResourceClaim,
) -> Result<Option<(&'a str, bool)>, PodClaimError> {
    if let Some(name) = &pod_claim.resource_claim_name {
        return Ok(Some((name, false)));
    }
    if pod_claim.resource_claim_template_name.is_none() {
        return Err(PodClaimError::unsupported_api(pod, pod_claim));
    }
    let changed = changes.iter().find(|c| c.pod_claim == pod_claim.name);
    let name = match changed.map(|c| &c.claim) {
        Some(Resolved::Existing(name)) => Some(*name),
        Some(Resolved::Created) => return Err(PodClaimError::not_created_yet(pod, pod_claim)),
        None => match recorded(&pod.resource_claim_statuses, &pod_claim.name) {
            Some(name) => name,
            None => return Err(PodClaimError::not_created_yet(pod, pod_claim)),
        },
    };
    Ok(name.map(|name| (name, true)))
}

fn reserves(actions: &[PodAction], claim_name: &str) -> bool {
    actions
        .iter()
        .any(|a| matches!(a, PodAction::Reserve(r) if r.claim.name == claim_name))
}

#[cfg(test)]
mod tests;
