//! PVC protection (upstream-behaviour §1): keeps `kubernetes.io/pvc-protection` on
//! every PVC and removes it from a deleting PVC once no pod can still use it.
//!
//! The guest decides; the host enqueues (§1.3), gathers the input, answers the
//! guest's request for a live pod list (§1.5, never removing on cache data alone),
//! validates the actions against the key and writes them conditionally.

mod keys;
mod live;
#[cfg(feature = "native")]
mod native;
pub mod rules;
pub mod validate;

use std::sync::Arc;

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use rekon_guest::model::{self, PvcDecision, PvcInput};
use serde_json::json;

use crate::cache::ObjectKey;
use crate::context::{Context, reference};
use crate::decider::{Decider, Slot};
use crate::journal::Entry;
use crate::live_lists::SharedLists;
use crate::projection::{CachedPod, CachedPvc, PODS_BY_PVC};
use crate::reconcile::{Outcome, ReconcileError, decide, log_failure};
use crate::reconciler::{Builtin, Reconciler};
use crate::watches::Watches;
use crate::writes::{WriteError, Writer};
use live::PodsByPvc;
use rekon_contract::PvcProtectionWorld;

pub const NAME: &str = "pvc-protection";
pub use rules::FINALIZER;

pub struct PvcProtection {
    ctx: Arc<Context>,
    decider: Arc<Slot<PvcProtectionWorld>>,
    live: LivePodLists,
}

impl Reconciler for PvcProtection {
    const NAME: &'static str = NAME;
    const APIS: &'static [&'static str] = &["v1"];
    type World = PvcProtectionWorld;
    type Key = ObjectKey;

    fn watches(self: &Arc<Self>, watches: &mut Watches<'_, ObjectKey>) {
        watches.on::<CachedPvc>(Self::keys_for_pvc);
        let this = self.clone();
        watches.on::<CachedPod>(move |change| {
            let keys = Self::keys_for_pod(change);
            if let Some(key) = keys.first() {
                this.live.changed(key.namespace.clone());
            }
            keys
        });
    }

    async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, ReconcileError> {
        self.sync(key).await
    }

    async fn error_policy(&self, key: &ObjectKey, err: &ReconcileError) -> Outcome {
        log_failure(NAME, key, err);
        if !err.is_conflict() {
            self.report_failure(key, err.to_string()).await;
        }
        err.requeue()
    }
}

impl Builtin for PvcProtection {
    fn new(ctx: Arc<Context>, decider: Arc<Slot<PvcProtectionWorld>>) -> Self {
        Self {
            ctx,
            decider,
            live: LivePodLists::default(),
        }
    }

    #[cfg(feature = "native")]
    fn native() -> Option<Arc<dyn Decider<PvcProtectionWorld>>> {
        Some(Arc::new(crate::decider::Native))
    }
}

impl PvcProtection {
    async fn sync(&self, key: &ObjectKey) -> Result<Outcome, ReconcileError> {
        let Some(cached) = self.ctx.caches.pvcs.get(key) else {
            return Ok(Outcome::Done);
        };
        let decider = self.decider.current();
        let guest = decider.info();
        let key_text = key.to_string();
        let cached_pods: Vec<model::Pod> = self
            .ctx
            .caches
            .pods
            .by_index(PODS_BY_PVC, &key_text)
            .iter()
            .map(|p| p.pod.clone())
            .collect();
        let pvc = &cached.pvc;
        let mut input = PvcInput {
            pvc: pvc.clone(),
            cached_pods,
            live_pods: None,
        };
        let mut decision = self.decide(&decider, &key_text, &input).await?;
        if decision == PvcDecision::NeedLivePods {
            // Upstream lists live pods only to release a deleting PVC (§1.5);
            // a guest must not make the host LIST a namespace for anything else.
            if !pvc.meta.is_deleting() {
                return Err(ReconcileError::Protocol {
                    guest: guest.name,
                    message: "asked for the live pod list for a PVC that is not being deleted"
                        .into(),
                });
            }
            let namespace = &key.namespace;
            let live = self
                .live
                .list(namespace, namespace.clone(), cached.observed, async || {
                    let result = live::list(&self.ctx.client, namespace).await;
                    self.ctx.journal.record(Entry::read(
                        NAME, &key_text, "list", "pods", namespace, "", &result,
                    ));
                    result.map_err(|source| ReconcileError::Read {
                        what: format!("live list of pods in {namespace}"),
                        source,
                    })
                })
                .await?;
            // Only this PVC's users: no other pod of the list can use it.
            input.live_pods = Some(live.get(&key_text).cloned().unwrap_or_default());
            drop(live);
            decision = self.decide(&decider, &key_text, &input).await?;
            if decision == PvcDecision::NeedLivePods {
                return Err(ReconcileError::Protocol {
                    guest: guest.name,
                    message: "asked for the live pod list again after receiving it".into(),
                });
            }
        }
        let PvcDecision::Actions(actions) = decision else {
            unreachable!("handled above")
        };
        let Some(write) = validate::plan(&key_text, &input, &actions)? else {
            tracing::info!(controller = NAME, key = %key, guest = %guest.name, digest = %guest.digest, decision = "none", "reconciled");
            return Ok(Outcome::Done);
        };
        let writer = Writer {
            client: self.ctx.client.clone(),
            journal: self.ctx.journal.clone(),
            controller: NAME,
        };
        let written = writer
            .set_finalizers::<PersistentVolumeClaim>(
                &key_text,
                &key.namespace,
                &key.name,
                &write.resource_version,
                &write.finalizers,
            )
            .await;
        match written {
            // Our own write is the newest state we know: deciding again on the
            // older cached copy before the watch catches up would only produce
            // writes doomed to 404/409.
            Ok(stored) => self
                .ctx
                .caches
                .pvcs
                .apply_own_write(CachedPvc::from_pvc(&stored), &pvc.meta.resource_version),
            // The PVC is gone: nothing is left to protect or release.
            Err(WriteError::NotFound { .. }) => return Ok(Outcome::Done),
            Err(err) => return Err(err.into()),
        }
        tracing::info!(controller = NAME, key = %key, guest = %guest.name, digest = %guest.digest, decision = %crate::budget::logged(&actions), writes = 1, "reconciled");
        Ok(Outcome::Done)
    }

    async fn decide(
        &self,
        decider: &Arc<dyn Decider<PvcProtectionWorld>>,
        key: &str,
        input: &PvcInput,
    ) -> Result<PvcDecision, ReconcileError> {
        decide(
            &self.ctx,
            NAME,
            key,
            decider,
            input.clone(),
            summarize(input),
        )
        .await
    }

    /// A Warning event on the PVC when a reconcile failed.
    async fn report_failure(&self, key: &ObjectKey, message: String) {
        if let Some(cached) = self.ctx.caches.pvcs.get(key) {
            self.ctx
                .event(
                    reference("PersistentVolumeClaim", "v1", &cached.pvc.meta),
                    true,
                    "FailedPVCProtection",
                    "Reconcile",
                    message,
                )
                .await;
        }
    }
}

fn summarize(input: &PvcInput) -> serde_json::Value {
    json!({
        "pvc": { "resourceVersion": input.pvc.meta.resource_version,
                 "deleting": input.pvc.meta.is_deleting(),
                 "finalizers": input.pvc.meta.finalizers },
        "cachedPods": input.cached_pods.iter().map(|p| &p.meta.name).collect::<Vec<_>>(),
        "livePods": input.live_pods.as_ref().map(Vec::len),
    })
}

/// Per-namespace live pod lists shared by the PVC keys of one namespace, by
/// the rule of [`crate::live_lists`] (scope and list key: the namespace). Only a
/// deleting copy can be released (validate rejects anything else), which is
/// what makes a list issued after the copy was observed fresh enough.
type LivePodLists = SharedLists<String, String, PodsByPvc>;
