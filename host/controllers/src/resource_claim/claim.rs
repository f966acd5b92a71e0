//! Claim keys (upstream-behaviour §3.7): drop pods that are gone or done from
//! `reservedFor`, release the allocation and the builtin finalizer, and delete
//! generated claims whose owner pod is done or replaced.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::ResourceClaim;
use kube::Api;
use rekon_guest::model::{self, ClaimDecision, ClaimInput, PodLookup, Reservation};
use serde_json::{Value, json};

use super::{NAME, ResourceClaimController, consumer_json};
use crate::budget::logged;
use crate::cache::ObjectKey;
use crate::journal::{Entry, Preconditions};
use std::sync::Arc;

use super::validate::{ClaimWrite, plan_claim};
use crate::decider::Decider;
use crate::reconcile::{Outcome, ReconcileError};
use crate::validate::Rejected;
use crate::writes::{Deleted, Writer};
use rekon_contract::{ResourceClaimDecision, ResourceClaimInput, ResourceClaimWorld};

impl ResourceClaimController {
    pub(super) async fn sync_claim(&self, key: &ObjectKey) -> Result<Outcome, ReconcileError> {
        let Some(claim) = self.ctx.caches.claims.get(key) else {
            return Ok(Outcome::Done);
        };
        let key_text = format!("claim:{key}");
        let mut input = self.claim_input(&claim);
        let decider = self.decider.current();
        let guest = decider.info();
        let mut decision = self.decide_claim(&decider, &key_text, &input).await?;
        if let ClaimDecision::NeedLivePods(names) = &decision {
            self.look_up_live(&key_text, &mut input, names).await?;
            decision = self.decide_claim(&decider, &key_text, &input).await?;
        }
        let ClaimDecision::Actions(actions) = decision else {
            return Err(ReconcileError::Protocol {
                guest: guest.name,
                message: "asked for live pods again after receiving them".into(),
            });
        };

        let writer = Writer {
            client: self.ctx.client.clone(),
            journal: self.ctx.journal.clone(),
            controller: NAME,
        };
        // The claim as this decision's writes leave it; later writes carry the
        // resourceVersion the previous one returned.
        let mut current = claim.as_ref().clone();
        // The whole decision is validated before its first write.
        let plan = plan_claim(&key_text, &input, &actions)?;
        let mut writes = 0;
        for write in plan {
            match write {
                ClaimWrite::Status {
                    reserved_for,
                    clear_allocation,
                } => {
                    let mut status = json!({
                        "reservedFor": reserved_for.iter().map(consumer_json).collect::<Vec<_>>()
                    });
                    if clear_allocation {
                        status["allocation"] = Value::Null;
                    }
                    let stored: ResourceClaim = writer
                        .patch_status(
                            &key_text,
                            &key.namespace,
                            &key.name,
                            &current.meta.resource_version,
                            status,
                        )
                        .await?;
                    current = crate::projection::claim(&stored);
                }
                ClaimWrite::RemoveFinalizer(finalizer) => {
                    let finalizers: Vec<String> = current
                        .meta
                        .finalizers
                        .iter()
                        .filter(|f| **f != finalizer)
                        .cloned()
                        .collect();
                    let stored: ResourceClaim = writer
                        .set_finalizers(
                            &key_text,
                            &key.namespace,
                            &key.name,
                            &current.meta.resource_version,
                            &finalizers,
                        )
                        .await?;
                    current = crate::projection::claim(&stored);
                }
                ClaimWrite::Delete => {
                    let outcome = writer
                        .delete::<ResourceClaim>(
                            &key_text,
                            &key.namespace,
                            &key.name,
                            &current.meta.uid,
                            &current.meta.resource_version,
                        )
                        .await?;
                    if outcome == Deleted::Gone {
                        self.forget_claim(&current);
                    }
                }
            }
            writes += 1;
        }
        tracing::info!(controller = NAME, key = %key_text, guest = %guest.name, digest = %guest.digest,
            decision = %logged(&actions), writes, "reconciled");
        Ok(Outcome::Done)
    }

    async fn decide_claim(
        &self,
        decider: &Arc<dyn Decider<ResourceClaimWorld>>,
        key: &str,
        input: &ClaimInput,
    ) -> Result<ClaimDecision, ReconcileError> {
        self.decide(
            decider,
            key,
            input,
            summarize(input),
            ResourceClaimInput::Claim,
            |d| match d {
                ResourceClaimDecision::Claim(d) => Some(d),
                ResourceClaimDecision::Pod(_) => None,
            },
        )
        .await
    }

    /// What the host knows of every pod in `reservedFor`, and of the owner pod.
    fn claim_input(&self, claim: &model::ResourceClaim) -> ClaimInput {
        let ns = &claim.meta.namespace;
        let pods = &self.ctx.caches.pods;
        let reservations = claim
            .reserved_for
            .iter()
            .filter(|c| c.is_pod())
            .map(|consumer| Reservation {
                consumer: consumer.clone(),
                deleted: self.was_deleted(&consumer.uid),
                pod: match pods.get(&ObjectKey::new(ns.clone(), consumer.name.clone())) {
                    Some(p) => PodLookup::Cached(p.pod.clone()),
                    None => PodLookup::Unknown,
                },
            })
            .collect();
        let owner_pod = claim
            .meta
            .owner_references
            .iter()
            .find(|o| o.controller)
            .filter(|o| o.is_pod_controller())
            .and_then(|o| pods.get(&ObjectKey::new(ns.clone(), o.name.clone())))
            .map(|p| p.pod.clone());
        ClaimInput {
            claim: claim.clone(),
            reservations,
            owner_pod,
        }
    }

    /// Live GETs of the pods the guest asked for (only those the cache lacks).
    async fn look_up_live(
        &self,
        key: &str,
        input: &mut ClaimInput,
        names: &[String],
    ) -> Result<(), ReconcileError> {
        let ns = input.claim.meta.namespace.clone();
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &ns);
        for name in names {
            let unknown = |r: &Reservation| r.consumer.name == *name && r.pod == PodLookup::Unknown;
            if !input.reservations.iter().any(unknown) {
                return Err(Rejected::decision(
                    key,
                    format!(
                        "guest asked for a live GET of pod {ns}/{}, which is not an unknown reservedFor entry",
                        crate::validate::shown(name)
                    ),
                )
                .into());
            }
            let result = api.get_opt(name).await;
            self.ctx.journal.record(Entry::Write {
                controller: NAME.into(),
                key: key.into(),
                verb: "get".into(),
                resource: "pods".into(),
                subresource: None,
                namespace: ns.clone(),
                name: name.clone(),
                preconditions: Preconditions {
                    uid: None,
                    resource_version: None,
                },
                code: match &result {
                    Ok(Some(_)) => 200,
                    Ok(None) => 404,
                    Err(kube::Error::Api(s)) => s.code,
                    Err(_) => 0,
                },
            });
            let pod = result.map_err(|source| ReconcileError::Read {
                what: format!("live GET of pod {ns}/{name}"),
                source,
            })?;
            // Every entry naming this pod gets the same answer.
            let lookup = match pod {
                Some(p) => PodLookup::Live(rekon_contract::project::project_pod(&p)),
                None => PodLookup::NotFound,
            };
            for r in input.reservations.iter_mut().filter(|r| unknown(r)) {
                r.pod = lookup.clone();
            }
        }
        Ok(())
    }
}

fn summarize(input: &ClaimInput) -> Value {
    json!({
        "claim": { "resourceVersion": input.claim.meta.resource_version,
                   "deleting": input.claim.meta.is_deleting(),
                   "allocated": input.claim.allocated,
                   "reservedFor": input.claim.reserved_for.iter().map(|c| &c.name).collect::<Vec<_>>(),
                   "finalizers": input.claim.meta.finalizers },
        "reservations": input.reservations.iter().map(|r| json!({
            "pod": r.consumer.name,
            "deleted": r.deleted,
            "lookup": match &r.pod { PodLookup::Cached(_) => "cached", PodLookup::Live(_) => "live",
                                     PodLookup::NotFound => "not-found", PodLookup::Unknown => "unknown" },
        })).collect::<Vec<_>>(),
        "ownerPod": input.owner_pod.as_ref().map(|p| &p.meta.name),
    })
}
