//! Pod keys (upstream-behaviour §3.4-3.6): generate or adopt the pod's claims,
//! write the complete `resourceClaimStatuses`, reserve claims for pre-scheduled pods.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::ResourceClaim;
use rekon_guest::model::{self, PodInput, StatusClaim};
use serde_json::{Value, json};

use super::{NAME, ResourceClaimController, consumer_json};
use crate::budget::{error_text, logged};
use crate::cache::ObjectKey;
use crate::projection::{ClaimName, resolve_claim_name};

use super::validate::{PodWrite, plan_pod};
use crate::context::reference;
use crate::reconcile::{Outcome, ReconcileError};
use crate::writes::{WriteError, Writer};
use rekon_contract::{ResourceClaimDecision, ResourceClaimInput};

/// How long a pod key waits for the informer to confirm the claims it created.
const CONFIRM_CREATIONS_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

impl ResourceClaimController {
    pub(super) async fn sync_pod(&self, key: &ObjectKey) -> Result<Outcome, ReconcileError> {
        let Some(cached) = self.ctx.caches.pods.get(key) else {
            return Ok(Outcome::Done);
        };
        let pod = &cached.pod;
        let key_text = format!("pod:{key}");
        self.verify_creations(pod, &key_text).await?;
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
            // The whole decision is validated before its first write.
            let plan = plan_pod(&key_text, &input, &decision.actions)?;
            for write in plan {
                match write {
                    PodWrite::Create { pod_claim, claim } => {
                        let result = writer.create(&key_text, &pod.meta.namespace, &*claim).await;
                        self.metrics.record_create(result.is_ok());
                        if let Err(WriteError::Failed { .. }) = &result {
                            self.mark_uncertain(&key_text);
                        }
                        let stored = result?;
                        writes += 1;
                        let projected = crate::projection::claim(&stored);
                        created.insert(pod_claim, projected.meta.name.clone());
                        self.remember_created(&key_text, projected);
                    }
                    PodWrite::Statuses {
                        resource_version,
                        statuses,
                    } => {
                        let list: Vec<Value> = statuses
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
                                &resource_version,
                                json!({ "resourceClaimStatuses": list }),
                            )
                            .await?;
                        writes += 1;
                    }
                    PodWrite::Reserve {
                        claim,
                        resource_version,
                        reserved_for,
                    } => {
                        let reserved: Vec<Value> = reserved_for.iter().map(consumer_json).collect();
                        writer
                            .patch_status::<ResourceClaim>(
                                &key_text,
                                &pod.meta.namespace,
                                &claim,
                                &resource_version,
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
        // Guest text, cut: a decision can carry megabytes of strings.
        tracing::info!(controller = NAME, key = %key_text, guest = %guest.name, digest = %guest.digest,
            decision = %logged(&decision.actions), error = decision.error.as_deref().map(error_text),
            writes, "reconciled");
        let error = match (applied, &decision.error) {
            (Err(err), _) => Some(err),
            (Ok(()), Some(message)) => Some(ReconcileError::decision(message)),
            (Ok(()), None) => None,
        };
        match error {
            // A claim created but not yet seen by the informer may be deleted
            // unseen (a watch gap): look again until the informer confirms it;
            // the next sync settles it with a live LIST (`verify_creations`).
            None if !self
                .expectations
                .get_create_expectations(&key_text)
                .is_empty() =>
            {
                Ok(Outcome::RetryAfter(CONFIRM_CREATIONS_AFTER))
            }
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
