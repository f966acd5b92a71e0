//! Generic ephemeral volumes (upstream-behaviour §2): for each pod volume with
//! `ephemeral.volumeClaimTemplate`, the PVC `<pod>-<volume>` owned by the pod.
//!
//! The guest names the volumes whose PVC to create, or the first conflict; the
//! host builds every PVC from the template it projected itself (never from guest
//! output), checks the whole decision before writing anything, and creates each
//! PVC with its exact name (a create is conditional by nature: 409 if it exists).

mod keys;
pub mod validate;

use std::sync::{Arc, Mutex};

use rekon_contract::EphemeralVolumeWorld;
use rekon_guest::ephemeral::{
    ControllerRef, EphemeralPod, EphemeralVolume, ExistingClaim, VolumeInput,
};
use rekon_guest::model;
use rekon_machinery::mutation_cache::MutationCache;
use serde_json::json;

use crate::cache::ObjectKey;
use crate::context::{Context, reference};
use crate::decider::Slot;
use crate::projection::{CachedPod, CachedPvc};
use crate::reconcile::{Outcome, ReconcileError, decide, log_failure};
use crate::reconciler::{Builtin, Reconciler};
use crate::watches::Watches;
use crate::writes::Writer;
use validate::{build_pvc, claim_name};

pub const NAME: &str = "ephemeral-volume";
/// Upstream's reason for a PVC that cannot be created or is not the pod's.
pub const REASON: &str = "FailedBinding";
/// The longest object name the API server accepts (a DNS subdomain).
pub const MAX_NAME_LENGTH: usize = 253;

pub struct EphemeralVolumeController {
    ctx: Arc<Context>,
    decider: Arc<Slot<EphemeralVolumeWorld>>,
    /// Informer PVCs plus those this controller just created, so a decision
    /// taken before the watch delivers a create sees the PVC as existing.
    created: Mutex<MutationCache<model::Pvc>>,
}

impl Reconciler for EphemeralVolumeController {
    const NAME: &'static str = NAME;
    const APIS: &'static [&'static str] = &["v1"];
    type World = EphemeralVolumeWorld;
    type Key = ObjectKey;

    fn watches(self: &Arc<Self>, watches: &mut Watches<'_, ObjectKey>) {
        watches.on::<CachedPod>(keys::keys_for_pod);
        let this = self.clone();
        watches.on::<CachedPvc>(move |change| this.keys_for_pvc(change));
    }

    async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, ReconcileError> {
        let Some(pod) = self.ctx.caches.pods.get(key) else {
            return Ok(Outcome::Done);
        };
        if pod.ephemeral.is_empty() {
            return Ok(Outcome::Done);
        }
        let key_text = key.to_string();
        let input = self.input(&pod);
        let decider = self.decider.current();
        let decision = decide(
            &self.ctx,
            NAME,
            &key_text,
            &decider,
            input.clone(),
            summarize(&input),
        )
        .await?;
        let plan = validate::plan(&input, &decision.actions)?;
        for volume in &plan.creates {
            self.create(&key_text, &pod, volume).await?;
        }
        if let Some(conflict) = plan.conflict {
            // Upstream's wording (ephemeral.VolumeIsForPod), from what the host
            // checked; the guest's message goes no further than the journal.
            let message = format!(
                "PVC {ns}/{} was not created for pod {ns}/{} (pod is not owner)",
                conflict.claim_name,
                key.name,
                ns = key.namespace
            );
            self.warn(&pod, &conflict.volume, &message).await;
            return Err(ReconcileError::decision(&format!("pod {key}: {message}")));
        }
        tracing::info!(controller = NAME, key = %key, created = plan.creates.len(), "reconciled");
        Ok(Outcome::Done)
    }

    async fn error_policy(&self, key: &ObjectKey, err: &ReconcileError) -> Outcome {
        log_failure(NAME, key, err);
        // 409 AlreadyExists: decide again on the fresh cache (owned or conflict).
        // A conflict action has recorded its own Event.
        if let ReconcileError::Write(write) = err
            && !write.is_conflict()
            && let Some(pod) = self.ctx.caches.pods.get(key)
        {
            self.warn(&pod, "", &write.to_string()).await;
        }
        err.requeue()
    }
}

impl Builtin for EphemeralVolumeController {
    fn new(ctx: Arc<Context>, decider: Arc<Slot<EphemeralVolumeWorld>>) -> Self {
        Self {
            ctx,
            decider,
            created: Mutex::new(MutationCache::new()),
        }
    }
}

impl EphemeralVolumeController {
    /// The pod's ephemeral volumes, each with the cached PVC of its name.
    fn input(&self, pod: &CachedPod) -> VolumeInput {
        let meta = &pod.pod.meta;
        let mut created = self.created.lock().unwrap();
        let volumes = pod
            .ephemeral
            .iter()
            .map(|t| {
                let name = claim_name(&meta.name, &t.volume);
                let key = ObjectKey::new(meta.namespace.as_str(), name.as_str());
                let cached = self.ctx.caches.pvcs.get(&key).map(|p| p.pvc.clone());
                let existing = created
                    .get(&key.to_string(), cached)
                    .map(|pvc| ExistingClaim {
                        name: pvc.meta.name.clone(),
                        uid: pvc.meta.uid.clone(),
                        controller: pvc.meta.controller().map(|c| ControllerRef {
                            kind: c.kind.clone(),
                            name: c.name.clone(),
                            uid: c.uid.clone(),
                        }),
                    });
                EphemeralVolume {
                    name: t.volume.clone(),
                    template: t.template.clone(),
                    existing,
                }
            })
            .collect();
        VolumeInput {
            pod: EphemeralPod {
                namespace: meta.namespace.clone(),
                name: meta.name.clone(),
                uid: meta.uid.clone(),
                deleting: meta.is_deleting(),
            },
            volumes,
        }
    }

    /// POSTs the PVC of `volume`, built from the host's own input (never from
    /// guest output).
    async fn create(
        &self,
        key: &str,
        pod: &CachedPod,
        volume: &EphemeralVolume,
    ) -> Result<(), ReconcileError> {
        let pvc = build_pvc(&pod.pod.meta, volume)?;
        let writer = Writer {
            client: self.ctx.client.clone(),
            journal: self.ctx.journal.clone(),
            controller: NAME,
        };
        let stored = writer.create(key, &pod.pod.meta.namespace, &pvc).await?;
        self.created
            .lock()
            .unwrap()
            .mutation(rekon_contract::project::project_pvc(&stored));
        Ok(())
    }

    /// A Warning Event on the pod, with upstream's reason and message form.
    async fn warn(&self, pod: &CachedPod, volume: &str, message: &str) {
        let note = if volume.is_empty() {
            message.to_string()
        } else {
            format!("ephemeral volume {volume}: {message}")
        };
        self.ctx
            .event(
                reference("Pod", "v1", &pod.pod.meta),
                true,
                REASON,
                "CreatePVC",
                note,
            )
            .await;
    }
}

fn summarize(input: &VolumeInput) -> serde_json::Value {
    json!({
        "pod": { "uid": input.pod.uid, "deleting": input.pod.deleting },
        "volumes": input.volumes.iter().map(|v| json!({
            "name": v.name,
            "existing": v.existing.as_ref().map(|e| &e.uid),
        })).collect::<Vec<_>>(),
    })
}
