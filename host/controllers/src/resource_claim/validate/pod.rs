//! Pod-key decisions (§3.4-3.6): claims generated from the pod's templates, the
//! pod's complete `resourceClaimStatuses`, reservations for pre-scheduled pods.
//!
//! A generated claim is *derived* by the host from its own cached template and
//! the pod; the guest's copy of labels, annotations, spec, owner and
//! generateName must equal the derived one or the decision is refused. Deriving
//! means the written object can only ever be what the template and the pod give,
//! even if a comparison here had a hole; comparing means a guest that deviates is
//! refused loudly, not silently corrected, so the journaled decision is the one
//! that was written.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference as KubeOwner};
use rekon_guest::generated_claim::generated_claim;
use rekon_guest::model::{
    ClaimStatuses, ConsumerReference, DesiredClaimStatus, NewClaim, Pod, PodAction, PodInput,
    PodResourceClaim, ReservationAdd, StatusClaim,
};
use serde_json::Value;

use super::{bounded_consumer, bounded_target};
use crate::resource_claim::ANNOTATION_POD_CLAIM_NAME;
use crate::validate::{
    MAX_KEY, MAX_NAME, MAX_VALUE, Rejected, bounded, check_count, shown, versioned,
};

/// Upstream `ResourceClaimReservedForMaxSize`: the API server refuses a claim
/// whose `status.reservedFor` has more entries, so no reservation grows past it.
pub const RESERVED_FOR_MAX_SIZE: usize = 256;

/// One write of a pod decision, in decision order.
#[derive(Debug, Clone, PartialEq)]
pub enum PodWrite {
    /// Create `claim` (generateName) for the pod claim `pod_claim`.
    Create {
        pod_claim: String,
        claim: Box<ResourceClaim>,
    },
    /// The pod's complete `resourceClaimStatuses`, conditional on
    /// `resource_version`; a `Created` entry names the claim an earlier `Create`
    /// of this plan made for that pod claim.
    Statuses {
        resource_version: String,
        statuses: Vec<DesiredClaimStatus>,
    },
    /// The claim's new `reservedFor` (the old one plus the pod), conditional on
    /// `resource_version`.
    Reserve {
        claim: String,
        resource_version: String,
        reserved_for: Vec<ConsumerReference>,
    },
}

/// A create and a status entry per pod claim, one status write, one reservation
/// per pod claim: `2 × claims + 2` bounds every honest decision.
pub fn max_pod_actions(pod: &Pod) -> usize {
    2 * pod.resource_claims.len() + 2
}

/// Validates the whole decision and returns its writes in order.
pub fn plan_pod(
    key: &str,
    input: &PodInput,
    actions: &[PodAction],
) -> Result<Vec<PodWrite>, Rejected> {
    check_count(key, actions.len(), max_pod_actions(&input.pod))?;
    let mut planner = Planner {
        input,
        created: HashSet::new(),
        statuses: None,
        reserved: HashSet::new(),
    };
    actions
        .iter()
        .enumerate()
        .map(|(index, action)| {
            planner
                .check(action)
                .map_err(|reason| Rejected::action(key, index, describe(action), reason))
        })
        .collect()
}

fn describe(action: &PodAction) -> String {
    match action {
        PodAction::CreateClaim(new) => {
            format!("create-claim for pod claim {}", shown(&new.pod_claim_name))
        }
        PodAction::SetClaimStatuses(s) => {
            format!("set-claim-statuses of pod {}", shown(&s.pod.name))
        }
        PodAction::Reserve(r) => format!(
            "reserve claim {} for {}",
            shown(&r.claim.name),
            shown(&r.consumer.name)
        ),
    }
}

/// What the decision's earlier actions established.
struct Planner<'a> {
    input: &'a PodInput,
    /// Pod claims this decision creates a claim for.
    created: HashSet<String>,
    /// The statuses this decision writes, once its status action was checked.
    statuses: Option<Vec<DesiredClaimStatus>>,
    /// Claims this decision reserves.
    reserved: HashSet<String>,
}

impl<'a> Planner<'a> {
    fn check(&mut self, action: &PodAction) -> Result<PodWrite, String> {
        match action {
            PodAction::CreateClaim(new) => self.create(new),
            PodAction::SetClaimStatuses(statuses) => self.set_statuses(statuses),
            PodAction::Reserve(add) => self.reserve(add),
        }
    }

    fn pod(&self) -> &'a Pod {
        &self.input.pod
    }

    fn pod_claim(&self, name: &str) -> Option<&'a PodResourceClaim> {
        self.pod().resource_claims.iter().find(|pc| pc.name == name)
    }

    /// The claim `name` in the input, if the pod controls it.
    fn owned(&self, name: &str) -> Option<&'a rekon_guest::model::ResourceClaim> {
        let input = self.input;
        input
            .claims
            .iter()
            .chain(&input.owned_claims)
            .find(|c| c.meta.name == name && input.pod.controls(&c.meta))
    }

    fn create(&mut self, new: &NewClaim) -> Result<PodWrite, String> {
        bounded_new_claim(new)?;
        let pod = self.pod();
        if pod.meta.is_deleting() || pod.is_done() {
            return Err("no claims are created for a deleting or done pod".into());
        }
        let Some(pod_claim) = self.pod_claim(&new.pod_claim_name) else {
            return Err("the pod has no such pod claim".into());
        };
        let template_name = match (
            &pod_claim.resource_claim_name,
            &pod_claim.resource_claim_template_name,
        ) {
            (None, Some(template)) => template,
            _ => return Err("the pod claim is not template-based".into()),
        };
        if new.template_name != *template_name {
            return Err(format!(
                "names template {}, the pod claim says {template_name:?}",
                shown(&new.template_name)
            ));
        }
        if let Some(existing) = self.existing_claim(pod_claim) {
            return Err(existing);
        }
        if !self.created.insert(pod_claim.name.clone()) {
            return Err("a second create for the same pod claim".into());
        }
        let template = self
            .input
            .templates
            .iter()
            .find(|t| t.meta.name == *template_name && t.meta.namespace == pod.meta.namespace)
            .ok_or_else(|| format!("template {template_name:?} is not in the input"))?;
        let derived = generated_claim(pod, pod_claim, template);
        compare(new, &derived)?;
        Ok(PodWrite::Create {
            pod_claim: pod_claim.name.clone(),
            claim: Box::new(build_claim(pod, &derived)?),
        })
    }

    /// Why `pod_claim` must not get a new claim, if it has one already (§3.5
    /// step 1, §3.6): a null status entry, a recorded claim the pod controls, or
    /// an orphan generated for it (to be adopted, never duplicated).
    fn existing_claim(&self, pod_claim: &PodResourceClaim) -> Option<String> {
        let recorded = self
            .pod()
            .resource_claim_statuses
            .iter()
            .find(|s| s.name == pod_claim.name);
        match recorded.map(|s| s.resource_claim_name.as_deref()) {
            Some(None) => return Some("the pod status says no claim is needed".into()),
            Some(Some(name)) if self.owned(name).is_some() => {
                return Some(format!("the pod already has claim {name:?} for it"));
            }
            _ => {}
        }
        let input = self.input;
        input
            .owned_claims
            .iter()
            .find(|c| {
                input.pod.controls(&c.meta)
                    && c.meta.annotation(ANNOTATION_POD_CLAIM_NAME) == Some(pod_claim.name.as_str())
            })
            .map(|c| format!("claim {:?} was generated for it already", c.meta.name))
    }

    fn set_statuses(&mut self, statuses: &ClaimStatuses) -> Result<PodWrite, String> {
        bounded_target("pod", &statuses.pod)?;
        if self.statuses.is_some() {
            return Err("a second status write".into());
        }
        let pod = self.pod();
        if statuses.pod != pod.meta.target() {
            return Err(format!(
                "targets pod {} (uid {}) at resourceVersion {}, not the key's pod at the version seen",
                shown(&statuses.pod.name),
                shown(&statuses.pod.uid),
                shown(&statuses.pod.resource_version)
            ));
        }
        if pod.meta.is_deleting() {
            return Err("a deleting pod's status is not written".into());
        }
        versioned("the pod", &pod.meta.resource_version)?;
        let mut names = HashSet::new();
        for entry in &statuses.statuses {
            bounded("status entry name", &entry.name, MAX_NAME)?;
            if !names.insert(entry.name.as_str()) {
                return Err(format!("two status entries for {}", shown(&entry.name)));
            }
            self.check_entry(entry)
                .map_err(|reason| format!("status entry {}: {reason}", shown(&entry.name)))?;
        }
        // Complete: no entry of the pod is dropped (k/k #138408), and every
        // template-based pod claim is recorded.
        let missing = pod
            .resource_claim_statuses
            .iter()
            .map(|s| &s.name)
            .chain(
                pod.resource_claims
                    .iter()
                    .filter(|pc| pc.resource_claim_template_name.is_some())
                    .map(|pc| &pc.name),
            )
            .find(|name| !names.contains(name.as_str()));
        if let Some(name) = missing {
            return Err(format!("the list is incomplete: no entry for {name:?}"));
        }
        self.statuses = Some(statuses.statuses.clone());
        Ok(PodWrite::Statuses {
            resource_version: pod.meta.resource_version.clone(),
            statuses: statuses.statuses.clone(),
        })
    }

    fn check_entry(&self, entry: &DesiredClaimStatus) -> Result<(), String> {
        let recorded = self
            .pod()
            .resource_claim_statuses
            .iter()
            .find(|s| s.name == entry.name)
            .map(|s| s.resource_claim_name.as_deref());
        let pod_claim = self.pod_claim(&entry.name);
        match &entry.claim {
            StatusClaim::Existing(name) => {
                bounded("claim name", name, MAX_NAME)?;
                let unchanged = recorded == Some(Some(name.as_str()));
                let direct =
                    pod_claim.is_some_and(|pc| pc.resource_claim_name.as_ref() == Some(name));
                if !(unchanged || direct) {
                    match pod_claim.filter(|pc| pc.resource_claim_template_name.is_some()) {
                        Some(pc) => self.adoptable(pc, recorded, name)?,
                        None => {
                            return Err(format!(
                                "claim {} is neither the pod claim's own reference nor a claim the pod controls",
                                shown(name)
                            ));
                        }
                    }
                }
            }
            StatusClaim::Created => {
                if !self.created.contains(&entry.name) {
                    return Err("names a claim this decision did not create before".into());
                }
            }
            // Only the pod's writer marks a claim as not needed; the controller
            // keeps such an entry, it never sets one.
            StatusClaim::None => {
                if recorded != Some(None) {
                    return Err("only an existing null entry may stay null".into());
                }
            }
        }
        if pod_claim.is_none() && recorded.is_none() {
            return Err("the pod has no such pod claim".into());
        }
        Ok(())
    }

    /// Whether the template pod claim `pc`, recorded as `recorded`, may be
    /// pointed at the claim `name` (§3.5 step 1, §3.6): never away from a
    /// recorded claim the pod controls, and only to a claim the pod controls
    /// whose `pod-claim-name` annotation names `pc`.
    fn adoptable(
        &self,
        pc: &PodResourceClaim,
        recorded: Option<Option<&str>>,
        name: &str,
    ) -> Result<(), String> {
        if let Some(Some(old)) = recorded
            && self.owned(old).is_some()
        {
            return Err(format!(
                "the pod claim is recorded with claim {old:?}, which the pod controls: a recorded claim is never changed"
            ));
        }
        let Some(claim) = self.owned(name) else {
            return Err(format!(
                "claim {} is neither the pod claim's own reference nor a claim the pod controls",
                shown(name)
            ));
        };
        match claim.meta.annotation(ANNOTATION_POD_CLAIM_NAME) {
            Some(generated_for) if generated_for == pc.name => Ok(()),
            Some(generated_for) => Err(format!(
                "claim {} was generated for pod claim {}",
                shown(name),
                shown(generated_for)
            )),
            None => Err(format!(
                "claim {} is not annotated {ANNOTATION_POD_CLAIM_NAME}: an unannotated claim is never adopted",
                shown(name)
            )),
        }
    }

    fn reserve(&mut self, add: &ReservationAdd) -> Result<PodWrite, String> {
        bounded_target("claim", &add.claim)?;
        bounded_consumer(&add.consumer)?;
        let pod = self.pod();
        if !pod.is_scheduled() || pod.is_done() || pod.meta.is_deleting() {
            return Err(
                "only a scheduled pod that is neither done nor deleting is reserved for".into(),
            );
        }
        if add.consumer != pod.consumer() {
            return Err("the consumer is not the key's pod".into());
        }
        let input = self.input;
        let Some(claim) = input
            .claims
            .iter()
            .chain(&input.owned_claims)
            .find(|c| c.meta.uid == add.claim.uid)
        else {
            return Err("the claim is not in the input".into());
        };
        if claim.meta.namespace != pod.meta.namespace {
            return Err(format!(
                "the claim is in namespace {}, not the pod's",
                shown(&claim.meta.namespace)
            ));
        }
        if add.claim != claim.meta.target() {
            return Err("targets the claim at another version than seen".into());
        }
        if !self.references(&claim.meta.name, pod.controls(&claim.meta)) {
            return Err("the pod does not reference this claim".into());
        }
        versioned("the claim", &claim.meta.resource_version)?;
        if !claim.allocated {
            return Err("the claim is not allocated".into());
        }
        if claim.reserved_for.iter().any(|c| c.uid == pod.meta.uid) {
            return Err("the claim is already reserved for the pod".into());
        }
        if claim.reserved_for.len() >= RESERVED_FOR_MAX_SIZE {
            return Err(format!(
                "reservedFor has {} entries already, at most {RESERVED_FOR_MAX_SIZE} allowed",
                claim.reserved_for.len()
            ));
        }
        if !self.reserved.insert(claim.meta.name.clone()) {
            return Err("a second reservation of the same claim".into());
        }
        let mut reserved_for = claim.reserved_for.clone();
        reserved_for.push(pod.consumer());
        Ok(PodWrite::Reserve {
            claim: claim.meta.name.clone(),
            resource_version: claim.meta.resource_version.clone(),
            reserved_for,
        })
    }

    /// A pod claim resolves to `name` (§3.1): a direct reference, or a
    /// template-based claim the pod controls, named by the statuses as this
    /// decision leaves them.
    fn references(&self, name: &str, controlled: bool) -> bool {
        let pod = self.pod();
        let recorded = |pod_claim: &str| match &self.statuses {
            Some(planned) => planned
                .iter()
                .any(|s| s.name == pod_claim && s.claim == StatusClaim::Existing(name.to_string())),
            None => pod
                .resource_claim_statuses
                .iter()
                .any(|s| s.name == pod_claim && s.resource_claim_name.as_deref() == Some(name)),
        };
        pod.resource_claims.iter().any(|pc| {
            pc.resource_claim_name.as_deref() == Some(name)
                || (pc.resource_claim_name.is_none()
                    && pc.resource_claim_template_name.is_some()
                    && controlled
                    && recorded(&pc.name))
        })
    }
}

fn bounded_new_claim(new: &NewClaim) -> Result<(), String> {
    bounded("pod claim name", &new.pod_claim_name, MAX_NAME)?;
    bounded("generateName", &new.generate_name, MAX_NAME)?;
    bounded("template name", &new.template_name, MAX_NAME)?;
    bounded("claim spec", &new.claim_spec_json, MAX_VALUE)?;
    for (k, v) in new.labels.iter().chain(&new.annotations) {
        bounded("label or annotation key", k, MAX_KEY)?;
        bounded("label or annotation value", v, MAX_VALUE)?;
    }
    for o in &new.owner_references {
        for (field, value) in [
            ("owner apiVersion", &o.api_version),
            ("owner kind", &o.kind),
            ("owner name", &o.name),
            ("owner uid", &o.uid),
        ] {
            bounded(field, value, MAX_NAME)?;
        }
    }
    Ok(())
}

/// The guest's claim must be the derived one: maps compared as maps (a key
/// given twice is refused), the spec compared as JSON.
fn compare(guest: &NewClaim, derived: &NewClaim) -> Result<(), String> {
    if guest.generate_name != derived.generate_name {
        return Err(format!(
            "generateName {} is not {:?}",
            shown(&guest.generate_name),
            derived.generate_name
        ));
    }
    if guest.owner_references != derived.owner_references {
        return Err(
            "ownerReferences must be exactly the pod as controller (v1 Pod, name, uid, controller, blockOwnerDeletion)"
                .into(),
        );
    }
    for (what, ours, theirs) in [
        ("labels", &derived.labels, &guest.labels),
        ("annotations", &derived.annotations, &guest.annotations),
    ] {
        let theirs_map = as_map(theirs);
        if theirs_map.len() != theirs.len() || theirs_map != as_map(ours) {
            return Err(format!("{what} differ from the template's"));
        }
    }
    if spec_value(&guest.claim_spec_json)? != spec_value(&derived.claim_spec_json)? {
        return Err("the claim spec differs from the template's".into());
    }
    Ok(())
}

fn as_map(pairs: &[(String, String)]) -> BTreeMap<&str, &str> {
    pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

fn spec_value(json: &str) -> Result<Value, String> {
    if json.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(json).map_err(|e| format!("the claim spec is not JSON: {e}"))
}

/// The object to create, from the derived claim.
fn build_claim(pod: &Pod, claim: &NewClaim) -> Result<ResourceClaim, String> {
    let spec: ResourceClaimSpec = serde_json::from_value(spec_value(&claim.claim_spec_json)?)
        .map_err(|e| {
            format!(
                "the spec of template {:?} is not a ResourceClaimSpec: {e}",
                claim.template_name
            )
        })?;
    let to_map = |pairs: &[(String, String)]| {
        (!pairs.is_empty()).then(|| pairs.iter().cloned().collect::<BTreeMap<_, _>>())
    };
    Ok(ResourceClaim {
        metadata: ObjectMeta {
            generate_name: Some(claim.generate_name.clone()),
            namespace: Some(pod.meta.namespace.clone()),
            labels: to_map(&claim.labels),
            annotations: to_map(&claim.annotations),
            owner_references: Some(
                claim
                    .owner_references
                    .iter()
                    .map(|o| KubeOwner {
                        api_version: o.api_version.clone(),
                        kind: o.kind.clone(),
                        name: o.name.clone(),
                        uid: o.uid.clone(),
                        controller: Some(o.controller),
                        block_owner_deletion: Some(o.block_owner_deletion),
                    })
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    })
}

#[cfg(test)]
mod tests;
