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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use rekon_guest::model::{self, PvcDecision, PvcInput};
use serde_json::json;

use crate::cache::ObjectKey;
use crate::context::{Context, reference};
use crate::decider::{Decider, Slot};
use crate::journal::Entry;
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
                this.live.pod_changed(&key.namespace);
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
            let live = self
                .live
                .list(&self.ctx, &key_text, &key.namespace, cached.observed)
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

type LiveList = Arc<PodsByPvc>;

/// Per-namespace live pod lists shared by the PVC keys of one namespace.
///
/// Freshness: a key may use any list issued after the host observed the cached
/// PVC copy it decides on (`CachedPvc::observed`), not only one issued after it
/// was dequeued (upstream, §1.5.3). Sound because only a deleting copy can be
/// released (validate rejects anything else), and a PVC that is deleting gains
/// no new users: the scheduler and kubelet refuse deleting PVCs (§1.5). So every
/// pod that can use the PVC already existed when the deleting copy was written,
/// hence before we observed it, and a consistent LIST issued afterwards shows it
/// unless it is gone. Many keys then share one LIST: at most one is in flight per
/// namespace (the slot's lock), and the keys waiting take the next one.
///
/// Liveness: a list must also postdate the last pod event that enqueued keys of
/// its namespace (`pod_changed`); else a key requeued by a pod's deletion could
/// reuse a list that still shows that pod, keep the finalizer and never be
/// enqueued again.
///
/// A namespace's last list is kept for [`RETAIN`] after it was issued, so keys
/// dequeued one after another share it too; older lists nobody holds are dropped
/// by the next request for any namespace. A failed list is not kept.
#[derive(Default)]
struct LivePodLists {
    by_namespace: Mutex<HashMap<String, Arc<NamespaceList>>>,
    /// When a pod event last enqueued PVC keys, per namespace. Entries older than
    /// [`RETAIN`] are dropped: every list still kept was issued after them.
    pod_changes: Mutex<HashMap<String, Instant>>,
}

/// How long a live list is kept for later keys (memory, not freshness: see above).
const RETAIN: Duration = Duration::from_secs(5);

/// The last live list of one namespace and when it was issued.
type NamespaceList = tokio::sync::Mutex<Option<(Instant, LiveList)>>;

impl LivePodLists {
    /// A pod event enqueued keys of `namespace` now.
    fn pod_changed(&self, namespace: &str) {
        let mut changes = self.pod_changes.lock().unwrap();
        changes.retain(|_, at| at.elapsed() < RETAIN);
        changes.insert(namespace.to_string(), Instant::now());
    }

    async fn list(
        &self,
        ctx: &Context,
        key: &str,
        namespace: &str,
        observed: Instant,
    ) -> Result<LiveList, ReconcileError> {
        let not_before = match self.pod_changes.lock().unwrap().get(namespace) {
            Some(changed) => observed.max(*changed),
            None => observed,
        };
        let slot = {
            let mut lists = self.by_namespace.lock().unwrap();
            // Held (strong count > 1) or locked: in use, keep.
            lists.retain(|_, slot| {
                Arc::strong_count(slot) > 1
                    || slot.try_lock().map_or(true, |list| {
                        list.as_ref()
                            .is_some_and(|(issued, _)| issued.elapsed() < RETAIN)
                    })
            });
            lists.entry(namespace.to_string()).or_default().clone()
        };
        Self::list_in(&slot, ctx, key, namespace, not_before).await
    }

    async fn list_in(
        slot: &NamespaceList,
        ctx: &Context,
        key: &str,
        namespace: &str,
        not_before: Instant,
    ) -> Result<LiveList, ReconcileError> {
        let mut slot = slot.lock().await;
        if let Some((issued, pods)) = slot.as_ref()
            && *issued >= not_before
        {
            return Ok(pods.clone());
        }
        let issued = Instant::now();
        let result = live::list(&ctx.client, namespace).await;
        ctx.journal.record(Entry::read(
            NAME, key, "list", "pods", namespace, "", &result,
        ));
        let pods: LiveList = Arc::new(result.map_err(|source| ReconcileError::Read {
            what: format!("live list of pods in {namespace}"),
            source,
        })?);
        *slot = Some((issued, pods.clone()));
        Ok(pods)
    }
}
