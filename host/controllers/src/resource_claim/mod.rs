//! The DRA ResourceClaim controller (upstream-behaviour §3) for resource.k8s.io/v1.
//!
//! Pod keys and claim keys share one queue. The guest decides; the host keeps the
//! claim mutation cache (so a just-created claim is adopted, never duplicated, while
//! the informer lags), the creation expectations, the deleted-pod memory, and
//! validates and writes every action conditionally.

mod claim;
mod key;
mod metrics;
mod pod;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rekon_guest::model;
use rekon_machinery::deleted_pods::DeletedPods;
use rekon_machinery::expectations::ExpectationsStore;
use rekon_machinery::mutation_cache::MutationCache;

pub use key::{ClaimControllerKey, KeyError};
pub use metrics::ClaimMetrics;

use crate::cache::{Change, ObjectKey};
use crate::context::{CLAIMS_BY_OWNER_UID, Context, PODS_BY_CLAIM, PODS_BY_TEMPLATE, reference, resolved_claim_name};
use crate::decider::{ClaimDecider, Slot};
use crate::projection::CachedPod;
use crate::reconcile::{Outcome, ReconcileError, log_failure};

pub const NAME: &str = "resource-claim";
pub const ANNOTATION_POD_CLAIM_NAME: &str = "resource.kubernetes.io/pod-claim-name";
pub const DELETE_PROTECTION_FINALIZER: &str = "resource.kubernetes.io/delete-protection";

/// How long a pod key waits for the informer to show a claim it created before
/// deciding again (the mutation cache normally makes this unnecessary).
const CREATION_WAIT: Duration = Duration::from_millis(200);

pub struct ResourceClaimController {
    ctx: Arc<Context>,
    decider: Arc<Slot<dyn ClaimDecider>>,
    /// Informer claims plus the claims this controller just created.
    created_claims: Mutex<MutationCache<model::ResourceClaim>>,
    /// Per pod key: UIDs of claims created but not yet seen by the informer.
    expectations: ExpectationsStore,
    deleted_pods: Mutex<DeletedPods>,
    pub metrics: ClaimMetrics,
}

impl ResourceClaimController {
    pub fn new(ctx: Arc<Context>, decider: Arc<Slot<dyn ClaimDecider>>) -> Self {
        Self {
            ctx,
            decider,
            created_claims: Mutex::new(MutationCache::new()),
            expectations: ExpectationsStore::new(),
            deleted_pods: Mutex::new(DeletedPods::new(500)),
            metrics: ClaimMetrics::default(),
        }
    }

    pub async fn reconcile(&self, key: &ClaimControllerKey) -> Outcome {
        let result = match key {
            ClaimControllerKey::Pod(k) => self.sync_pod(k).await,
            ClaimControllerKey::Claim(k) => self.sync_claim(k).await,
        };
        match result {
            Ok(outcome) => outcome,
            Err(err) => {
                log_failure(NAME, key.object(), &err);
                if let (ClaimControllerKey::Claim(k), false) = (key, err.is_conflict()) {
                    if let Some(claim) = self.ctx.caches.claims.get(k) {
                        self.ctx
                            .event(
                                reference("ResourceClaim", "resource.k8s.io/v1", &claim.meta),
                                true,
                                "FailedResourceClaimSync",
                                "Reconcile",
                                err.to_string(),
                            )
                            .await;
                    }
                }
                Outcome::Retry
            }
        }
    }

    // ---- event handlers (§3.3) ----

    /// Keys a pod event enqueues.
    pub fn keys_for_pod(&self, change: &Change<CachedPod>) -> Vec<ClaimControllerKey> {
        let (pod, deleted) = match change {
            Change::Applied { new, .. } => (&new.pod, false),
            Change::Deleted(old) => (&old.pod, true),
        };
        if deleted {
            self.deleted_pods.lock().unwrap().insert(pod.meta.uid.clone());
        }
        self.keys_for_pod_state(pod, deleted)
    }

    fn keys_for_pod_state(&self, pod: &model::Pod, deleted: bool) -> Vec<ClaimControllerKey> {
        if pod.resource_claims.is_empty() {
            return Vec::new();
        }
        let mut keys = Vec::new();
        // Release path: the pod no longer needs its claims.
        if deleted || pod.is_done() {
            for pod_claim in &pod.resource_claims {
                if let Some(name) = resolved_claim_name(pod, pod_claim) {
                    keys.push(ClaimControllerKey::Claim(ObjectKey::new(pod.meta.namespace.clone(), name)));
                }
            }
        }
        if !deleted && self.pod_needs_work(pod) {
            keys.push(ClaimControllerKey::Pod(ObjectKey::new(
                pod.meta.namespace.clone(),
                pod.meta.name.clone(),
            )));
        }
        keys
    }

    /// PodNeedsWork (§3.3): claims to create, or an allocated claim to reserve for
    /// a scheduled pod.
    fn pod_needs_work(&self, pod: &model::Pod) -> bool {
        if pod.meta.is_deleting() {
            return false;
        }
        for pod_claim in &pod.resource_claims {
            let template_based = pod_claim.resource_claim_template_name.is_some();
            let name = match (&pod_claim.resource_claim_name, template_based) {
                (Some(name), _) => name.as_str(),
                (None, true) => match pod.resource_claim_statuses.iter().find(|s| s.name == pod_claim.name) {
                    None => return true, // not created yet
                    Some(status) => match &status.resource_claim_name {
                        None => return false, // intentionally no claim: stop here, like upstream
                        Some(name) => name.as_str(),
                    },
                },
                (None, false) => return true, // unsupported: let the sync report it
            };
            let key = ObjectKey::new(pod.meta.namespace.clone(), name);
            let Some(claim) = self.ctx.caches.claims.get(&key) else {
                return template_based; // template: must create; direct: the user must create it
            };
            if template_based && !pod.controls(&claim.meta) {
                return false; // a conflict only a user can fix
            }
            if !pod.is_scheduled() {
                continue;
            }
            let reserved = claim.reserved_for.iter().any(|c| c.uid == pod.meta.uid);
            if claim.allocated && !reserved && !pod.is_done() {
                return true;
            }
        }
        false
    }

    /// Keys a claim event enqueues: the claim itself on add/update (never on
    /// delete — the #132334 regression inverted this), and the work of every pod
    /// that references the claim.
    pub fn keys_for_claim(&self, change: &Change<model::ResourceClaim>) -> Vec<ClaimControllerKey> {
        let claim = match change {
            Change::Applied { new, .. } => new,
            Change::Deleted(old) => old,
        };
        let (claims_total, allocated) = self.claim_counts();
        self.metrics.set_claims(claims_total, allocated);
        let object = ObjectKey::new(claim.meta.namespace.clone(), claim.meta.name.clone());
        let mut keys = Vec::new();
        match change {
            Change::Applied { new, .. } => {
                self.observe_claim(new);
                keys.push(ClaimControllerKey::Claim(object.clone()));
            }
            Change::Deleted(old) => self.forget_claim(old),
        }
        for pod in self.ctx.caches.pods.by_index(PODS_BY_CLAIM, &object.to_string()) {
            keys.extend(self.keys_for_pod_state(&pod.pod, false));
        }
        keys
    }

    /// A template add enqueues the pods that reference it (PR #135983).
    pub fn keys_for_template(&self, change: &Change<model::ResourceClaimTemplate>) -> Vec<ClaimControllerKey> {
        let Change::Applied { old: None, new } = change else {
            return Vec::new();
        };
        let index = format!("{}/{}", new.meta.namespace, new.meta.name);
        self.ctx
            .caches
            .pods
            .by_index(PODS_BY_TEMPLATE, &index)
            .iter()
            .filter(|p| self.pod_needs_work(&p.pod))
            .map(|p| ClaimControllerKey::Pod(ObjectKey::new(p.pod.meta.namespace.clone(), p.pod.meta.name.clone())))
            .collect()
    }

    fn claim_counts(&self) -> (usize, usize) {
        let all = self.ctx.caches.claims.list();
        let allocated = all.iter().filter(|c| c.allocated).count();
        (all.len(), allocated)
    }

    // ---- the caches around claim creation ----

    /// Claims controlled by `pod_uid`: the informer's, each replaced by a newer
    /// just-written copy, plus just-created claims the informer has not shown yet.
    fn owned_claims(&self, pod_uid: &str) -> Vec<model::ResourceClaim> {
        let backing = self.ctx.caches.claims.by_index(CLAIMS_BY_OWNER_UID, pod_uid);
        let backing: Vec<model::ResourceClaim> = backing.iter().map(|c| c.as_ref().clone()).collect();
        self.created_claims
            .lock()
            .unwrap()
            .by_index(backing, |c: &model::ResourceClaim| {
                c.meta.owner_references.iter().any(|o| o.is_pod_controller() && o.uid == pod_uid)
            })
    }

    fn remember_created(&self, pod_key: &str, claim: model::ResourceClaim) {
        self.expectations.expect_creations(pod_key, [claim.meta.uid.clone()]);
        self.created_claims.lock().unwrap().mutation(claim);
    }

    /// The informer shows `claim`: its creation is observed.
    fn observe_claim(&self, claim: &model::ResourceClaim) {
        if let Some(owner) = claim.meta.controller().filter(|o| o.is_pod_controller()) {
            let pod_key = format!("pod:{}/{}", claim.meta.namespace, owner.name);
            self.expectations.observe_creations(&pod_key, [claim.meta.uid.clone()]);
        }
    }

    /// A claim is gone: it must not be adopted any more (§6 delete eviction).
    fn forget_claim(&self, claim: &model::ResourceClaim) {
        self.observe_claim(claim);
        self.created_claims.lock().unwrap().on_delete(claim);
    }

    fn was_deleted(&self, pod_uid: &str) -> bool {
        self.deleted_pods.lock().unwrap().contains(pod_uid)
    }

    /// While a claim this controller created is neither in the informer nor in
    /// the mutation cache, deciding again could create a second one: wait.
    fn pending_creations(&self, pod: &model::Pod, pod_key: &str) -> Option<Outcome> {
        let pending = self.expectations.get_create_expectations(pod_key);
        if pending.is_empty() {
            return None;
        }
        let visible = self.owned_claims(&pod.meta.uid);
        let unseen = pending
            .iter()
            .any(|uid| !visible.iter().any(|c| &c.meta.uid == uid));
        unseen.then_some(Outcome::RetryAfter(CREATION_WAIT))
    }
}

impl From<KeyError> for ReconcileError {
    fn from(err: KeyError) -> Self {
        ReconcileError::Rejected(err.to_string())
    }
}
