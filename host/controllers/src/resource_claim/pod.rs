//! Pod keys (upstream-behaviour §3.4-3.6): generate or adopt the pod's claims,
//! write the complete `resourceClaimStatuses`, reserve claims for pre-scheduled pods.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use rekon_guest::model::{self, PodAction, PodInput, StatusClaim};
use serde_json::{Value, json};

use super::{ANNOTATION_POD_CLAIM_NAME, NAME, ResourceClaimController, consumer_json};
use crate::cache::ObjectKey;
use rekon_machinery::enqueue::resource_claim::{ClaimName, resolve_claim_name};

use crate::context::reference;
use crate::reconcile::{Outcome, ReconcileError};
use crate::writes::Writer;
use rekon_contract::{ResourceClaimDecision, ResourceClaimInput};

impl ResourceClaimController {
    pub(super) async fn sync_pod(&self, key: &ObjectKey) -> Result<Outcome, ReconcileError> {
        let Some(cached) = self.ctx.caches.pods.get(key) else {
            return Ok(Outcome::Done);
        };
        let pod = &cached.pod;
        let key_text = format!("pod:{key}");
        if let Some(wait) = self.pending_creations(pod, &key_text) {
            return Ok(wait);
        }
        let input = self.pod_input(pod);
        let decider = self.decider.current();
        let guest = decider.info();
        let decision = self
            .decide(
                &decider,
                &key_text,
                &input,
                summarize(&input),
                ResourceClaimInput::Pod,
                |d| match d {
                    ResourceClaimDecision::Pod(d) => Some(d),
                    ResourceClaimDecision::Claim(_) => None,
                },
            )
            .await?;

        let writer = Writer {
            client: self.ctx.client.clone(),
            journal: self.ctx.journal.clone(),
            controller: NAME,
        };
        let mut created: HashMap<String, String> = HashMap::new();
        let mut writes = 0;
        let applied: Result<(), ReconcileError> = async {
            for action in &decision.actions {
                validate_pod_action(&input, action, &created)?;
                match action {
                    PodAction::CreateClaim(new) => {
                        let claim = build_claim(pod, new)?;
                        let result = writer.create(&key_text, &pod.meta.namespace, &claim).await;
                        self.metrics.record_create(result.is_ok());
                        let stored = result?;
                        writes += 1;
                        let projected = crate::projection::claim(&stored);
                        created.insert(new.pod_claim_name.clone(), projected.meta.name.clone());
                        self.remember_created(&key_text, projected);
                    }
                    PodAction::SetClaimStatuses(statuses) => {
                        let list: Vec<Value> = statuses
                            .statuses
                            .iter()
                            .map(|s| match &s.claim {
                                StatusClaim::Existing(name) => {
                                    json!({"name": s.name, "resourceClaimName": name})
                                }
                                StatusClaim::Created => {
                                    json!({"name": s.name, "resourceClaimName": created[&s.name]})
                                }
                                StatusClaim::None => json!({"name": s.name}),
                            })
                            .collect();
                        writer
                            .patch_status::<Pod>(
                                &key_text,
                                &pod.meta.namespace,
                                &pod.meta.name,
                                &pod.meta.resource_version,
                                json!({ "resourceClaimStatuses": list }),
                            )
                            .await?;
                        writes += 1;
                    }
                    PodAction::Reserve(add) => {
                        let claim = input
                            .claims
                            .iter()
                            .find(|c| c.meta.uid == add.claim.uid)
                            .expect("validated");
                        let mut reserved: Vec<Value> =
                            claim.reserved_for.iter().map(consumer_json).collect();
                        reserved.push(consumer_json(&add.consumer));
                        writer
                            .patch_status::<ResourceClaim>(
                                &key_text,
                                &claim.meta.namespace,
                                &claim.meta.name,
                                &add.claim.resource_version,
                                json!({ "reservedFor": reserved }),
                            )
                            .await?;
                        writes += 1;
                    }
                }
            }
            Ok(())
        }
        .await;
        tracing::info!(controller = NAME, key = %key_text, guest = %guest.name, digest = %guest.digest,
            decision = ?decision.actions, error = ?decision.error, writes, "reconciled");
        let error = match (applied, &decision.error) {
            (Err(err), _) => Some(err),
            (Ok(()), Some(message)) => Some(ReconcileError::Decision(message.clone())),
            (Ok(()), None) => None,
        };
        match error {
            None => Ok(Outcome::Done),
            Some(err) => {
                if !err.is_conflict() {
                    self.ctx
                        .event(
                            reference("Pod", "v1", &pod.meta),
                            true,
                            "FailedResourceClaimCreation",
                            "CreateResourceClaim",
                            format!("PodResourceClaim: {err}"),
                        )
                        .await;
                }
                Err(err)
            }
        }
    }

    /// The guest's input: the pod, the claims it names, the claims it controls
    /// (through the mutation cache, so just-created claims count), the templates.
    fn pod_input(&self, pod: &model::Pod) -> PodInput {
        let ns = &pod.meta.namespace;
        let caches = &self.ctx.caches;
        let mut claims = Vec::new();
        let mut templates = Vec::new();
        for pod_claim in &pod.resource_claims {
            if let ClaimName::Resolved { name, .. } = resolve_claim_name(pod, pod_claim)
                && let Some(claim) = caches.claims.get(&ObjectKey::new(ns.clone(), name))
                && !claims
                    .iter()
                    .any(|c: &model::ResourceClaim| c.meta.uid == claim.meta.uid)
            {
                claims.push(claim.as_ref().clone());
            }
            if let Some(template) = &pod_claim.resource_claim_template_name
                && let Some(t) = caches
                    .templates
                    .get(&ObjectKey::new(ns.clone(), template.clone()))
                && !templates
                    .iter()
                    .any(|x: &model::ResourceClaimTemplate| x.meta.name == *template)
            {
                templates.push(t.as_ref().clone());
            }
        }
        PodInput {
            pod: pod.clone(),
            claims,
            owned_claims: self.owned_claims(&pod.meta.uid),
            templates,
        }
    }
}

fn summarize(input: &PodInput) -> Value {
    json!({
        "pod": { "resourceVersion": input.pod.meta.resource_version,
                 "nodeName": input.pod.node_name,
                 "deleting": input.pod.meta.is_deleting(),
                 "podClaims": input.pod.resource_claims.iter().map(|c| &c.name).collect::<Vec<_>>(),
                 "statuses": input.pod.resource_claim_statuses.len() },
        "claims": input.claims.iter().map(|c| &c.meta.name).collect::<Vec<_>>(),
        "ownedClaims": input.owned_claims.iter().map(|c| &c.meta.name).collect::<Vec<_>>(),
        "templates": input.templates.iter().map(|t| &t.meta.name).collect::<Vec<_>>(),
    })
}

fn rejected(message: String) -> ReconcileError {
    ReconcileError::Rejected(message)
}

/// A pod decision may only create claims owned by this pod for its own pod claims,
/// write this pod's status, and reserve claims the pod names for this pod.
fn validate_pod_action(
    input: &PodInput,
    action: &PodAction,
    created: &HashMap<String, String>,
) -> Result<(), ReconcileError> {
    let pod = &input.pod;
    let pod_claim = |name: &str| pod.resource_claims.iter().find(|pc| pc.name == name);
    match action {
        PodAction::CreateClaim(new) => {
            let Some(pc) = pod_claim(&new.pod_claim_name) else {
                return Err(rejected(format!(
                    "create-claim for unknown pod claim {:?}",
                    new.pod_claim_name
                )));
            };
            if pc.resource_claim_template_name.as_deref() != Some(new.template_name.as_str()) {
                return Err(rejected(format!(
                    "create-claim for pod claim {:?} names template {:?}, the pod says {:?}",
                    pc.name, new.template_name, pc.resource_claim_template_name
                )));
            }
            if pod.meta.is_deleting() {
                return Err(rejected("no claims are created for a deleting pod".into()));
            }
            let [owner] = new.owner_references.as_slice() else {
                return Err(rejected(
                    "a generated claim needs exactly one owner reference".into(),
                ));
            };
            if !(owner.is_pod_controller()
                && owner.uid == pod.meta.uid
                && owner.name == pod.meta.name)
            {
                return Err(rejected(format!(
                    "generated claim must be controlled by pod {}",
                    pod.meta.name
                )));
            }
            let annotated = new
                .annotations
                .iter()
                .any(|(k, v)| k == ANNOTATION_POD_CLAIM_NAME && *v == new.pod_claim_name);
            if !annotated {
                return Err(rejected(format!(
                    "generated claim lacks {ANNOTATION_POD_CLAIM_NAME}"
                )));
            }
            if new.generate_name.is_empty() || new.generate_name.len() > 58 {
                return Err(rejected(format!(
                    "bad generateName {:?}",
                    new.generate_name
                )));
            }
            Ok(())
        }
        PodAction::SetClaimStatuses(statuses) => {
            if statuses.pod != pod.meta.target() {
                return Err(rejected(
                    "claim statuses must target the key's pod at the version seen".into(),
                ));
            }
            for s in &statuses.statuses {
                if pod_claim(&s.name).is_none() {
                    return Err(rejected(format!(
                        "status entry for unknown pod claim {:?}",
                        s.name
                    )));
                }
                if s.claim == StatusClaim::Created && !created.contains_key(&s.name) {
                    return Err(rejected(format!(
                        "status entry {:?} names a claim this decision did not create",
                        s.name
                    )));
                }
            }
            Ok(())
        }
        PodAction::Reserve(add) => {
            let Some(claim) = input.claims.iter().find(|c| c.meta.uid == add.claim.uid) else {
                return Err(rejected(format!(
                    "reserve targets claim {} that the pod does not name",
                    add.claim.name
                )));
            };
            if add.claim != claim.meta.target() {
                return Err(rejected(
                    "reserve must target the claim at the version seen".into(),
                ));
            }
            if add.consumer != pod.consumer() || pod.is_done() {
                return Err(rejected(
                    "a pod decision may reserve only for its own pod, never a done one".into(),
                ));
            }
            Ok(())
        }
    }
}

/// The claim object to create for a `create-claim` action.
fn build_claim(pod: &model::Pod, new: &model::NewClaim) -> Result<ResourceClaim, ReconcileError> {
    let spec: ResourceClaimSpec = if new.claim_spec_json.trim().is_empty() {
        ResourceClaimSpec::default()
    } else {
        serde_json::from_str(&new.claim_spec_json).map_err(|e| {
            ReconcileError::Rejected(format!(
                "claim spec of template {:?} is not a ResourceClaimSpec: {e}",
                new.template_name
            ))
        })?
    };
    let to_map = |pairs: &[(String, String)]| {
        (!pairs.is_empty()).then(|| {
            pairs
                .iter()
                .cloned()
                .collect::<std::collections::BTreeMap<_, _>>()
        })
    };
    Ok(ResourceClaim {
        metadata: ObjectMeta {
            generate_name: Some(new.generate_name.clone()),
            namespace: Some(pod.meta.namespace.clone()),
            labels: to_map(&new.labels),
            annotations: to_map(&new.annotations),
            owner_references: Some(
                new.owner_references
                    .iter()
                    .map(|o| OwnerReference {
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
