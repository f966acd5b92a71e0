//! The DRA ResourceClaim controller (upstream-behaviour §3) for resource.k8s.io/v1.
//!
//! Pod keys and claim keys share one queue. The guest decides; the host keeps the
//! claim mutation cache (so a just-created claim is adopted, never duplicated, while
//! the informer lags), the creation expectations, the deleted-pod memory, and
//! validates and writes every action conditionally.

mod claim;
mod keys;
mod metrics;
#[cfg(feature = "native")]
mod native;
mod pod;
pub mod rules;
pub mod validate;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::resource::v1::ResourceClaim;
use kube::Api;
use kube::api::ListParams;

use rekon_guest::model;
use rekon_machinery::deleted_pods::DeletedPods;
use rekon_machinery::expectations::ExpectationsStore;
use rekon_machinery::mutation_cache::MutationCache;

pub use keys::ClaimControllerKey;
pub use metrics::ClaimMetrics;

use crate::cache::ObjectKey;

use crate::context::{Context, reference};
use crate::decider::{Decider, Slot};
use crate::journal::{Entry, Journal};
use crate::observe::MetricFamily;
use crate::projection::{CLAIMS_BY_OWNER_UID, CachedPod};
use crate::reconcile::{Outcome, ReconcileError, decide, log_failure};
use crate::reconciler::{Builtin, Reconciler};
use crate::watches::Watches;
use rekon_contract::{ResourceClaimDecision, ResourceClaimInput, ResourceClaimWorld};

pub const NAME: &str = "resource-claim";
pub use rekon_guest::generated_claim::POD_CLAIM_NAME_ANNOTATION as ANNOTATION_POD_CLAIM_NAME;
pub const DELETE_PROTECTION_FINALIZER: &str = "resource.kubernetes.io/delete-protection";

pub struct ResourceClaimController {
    ctx: Arc<Context>,
    decider: Arc<Slot<ResourceClaimWorld>>,
    /// Informer claims plus the claims this controller just created.
    created_claims: Mutex<MutationCache<model::ResourceClaim>>,
    /// Per pod key: UIDs of claims created but not yet seen by the informer.
    /// Dropped with the pod.
    expectations: ExpectationsStore,
    /// Pod keys with a claim create whose outcome is unknown (its answer was
    /// lost). Dropped with the pod.
    uncertain: Mutex<HashSet<String>>,
    deleted_pods: Mutex<DeletedPods>,
    pub metrics: ClaimMetrics,
}

impl Reconciler for ResourceClaimController {
    const NAME: &'static str = NAME;
    const APIS: &'static [&'static str] = &["v1", "resource.k8s.io/v1"];
    type World = ResourceClaimWorld;
    type Key = ClaimControllerKey;

    fn watches(self: &Arc<Self>, watches: &mut Watches<'_, ClaimControllerKey>) {
        let this = self.clone();
        watches.on::<CachedPod>(move |change| this.keys_for_pod(change));
        let this = self.clone();
        watches.on::<model::ResourceClaim>(move |change| this.keys_for_claim(change));
        let this = self.clone();
        watches.on::<model::ResourceClaimTemplate>(move |change| this.keys_for_template(change));
    }

    fn metrics(&self) -> Vec<MetricFamily> {
        self.metrics.families()
    }

    async fn reconcile(&self, key: &ClaimControllerKey) -> Result<Outcome, ReconcileError> {
        match key {
            ClaimControllerKey::Pod(k) => self.sync_pod(k).await,
            ClaimControllerKey::Claim(k) => self.sync_claim(k).await,
        }
    }

    async fn error_policy(&self, key: &ClaimControllerKey, err: &ReconcileError) -> Outcome {
        log_failure(NAME, key, err);
        if let (ClaimControllerKey::Claim(k), false) = (key, err.is_conflict())
            && let Some(claim) = self.ctx.caches.claims.get(k)
        {
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
        err.requeue()
    }
}

impl Builtin for ResourceClaimController {
    fn new(ctx: Arc<Context>, decider: Arc<Slot<ResourceClaimWorld>>) -> Self {
        Self {
            ctx,
            decider,
            created_claims: Mutex::new(MutationCache::new()),
            expectations: ExpectationsStore::new(),
            uncertain: Mutex::default(),
            deleted_pods: Mutex::new(DeletedPods::new(500)),
            metrics: ClaimMetrics::default(),
        }
    }

    #[cfg(feature = "native")]
    fn native() -> Option<Arc<dyn Decider<ResourceClaimWorld>>> {
        Some(Arc::new(crate::decider::Native))
    }
}

impl ResourceClaimController {
    /// One decision of this controller's world; `wrap` and `unwrap` pick the
    /// pod or claim variant.
    async fn decide<I: Clone, D>(
        &self,
        decider: &Arc<dyn Decider<ResourceClaimWorld>>,
        key: &str,
        input: &I,
        summary: serde_json::Value,
        wrap: fn(I) -> ResourceClaimInput,
        unwrap: fn(ResourceClaimDecision) -> Option<D>,
    ) -> Result<D, ReconcileError> {
        let decision = decide(&self.ctx, NAME, key, decider, wrap(input.clone()), summary).await?;
        unwrap(decision).ok_or_else(|| ReconcileError::Protocol {
            guest: decider.info().name,
            message: "answered with the other decision kind".into(),
        })
    }

    // ---- the caches around claim creation ----

    /// Claims controlled by `pod_uid`: the informer's, each replaced by a newer
    /// just-written copy, plus just-created claims the informer has not shown yet.
    fn owned_claims(&self, pod_uid: &str) -> Vec<model::ResourceClaim> {
        let backing = self
            .ctx
            .caches
            .claims
            .by_index(CLAIMS_BY_OWNER_UID, pod_uid);
        let backing: Vec<model::ResourceClaim> =
            backing.iter().map(|c| c.as_ref().clone()).collect();
        self.created_claims
            .lock()
            .unwrap()
            .by_index(backing, |c: &model::ResourceClaim| {
                c.meta
                    .owner_references
                    .iter()
                    .any(|o| o.is_pod_controller() && o.uid == pod_uid)
            })
    }

    fn remember_created(&self, pod_key: &str, claim: model::ResourceClaim) {
        // Expect first, then look: the cache is updated before its handlers run,
        // so a claim the watch delivered before the create's answer is either in
        // the cache now or observed by its handler after this expectation (checking
        // first left a window where the handler's observation came too early and
        // the pod waited for the claim forever — campaign seeds 132 and 144).
        let uid = claim.meta.uid.clone();
        self.expectations.expect_creations(pod_key, [uid.clone()]);
        let key = ObjectKey::new(claim.meta.namespace.clone(), claim.meta.name.clone());
        let seen = self
            .ctx
            .caches
            .claims
            .get(&key)
            .is_some_and(|c| c.meta.uid == uid);
        if seen {
            self.expectations.observe_creations(pod_key, [uid]);
        }
        self.created_claims.lock().unwrap().mutation(claim);
    }

    /// The informer shows `claim`: its creation is observed. Returns the owning
    /// pod once its last unconfirmed creation is confirmed: its second look
    /// (`CONFIRM_CREATIONS_AFTER`) is then due now, not a second later.
    fn observe_claim(&self, claim: &model::ResourceClaim) -> Option<ObjectKey> {
        let owner = claim.meta.controller().filter(|o| o.is_pod_controller())?;
        let pod_key = format!("pod:{}/{}", claim.meta.namespace, owner.name);
        if self
            .expectations
            .get_create_expectations(&pod_key)
            .is_empty()
        {
            return None;
        }
        self.expectations
            .observe_creations(&pod_key, [claim.meta.uid.clone()]);
        self.expectations
            .get_create_expectations(&pod_key)
            .is_empty()
            .then(|| ObjectKey::new(claim.meta.namespace.clone(), owner.name.clone()))
    }

    /// A claim is gone: it must not be adopted any more (§6 delete eviction).
    fn forget_claim(&self, claim: &model::ResourceClaim) {
        self.observe_claim(claim);
        self.created_claims.lock().unwrap().on_delete(claim);
    }

    fn was_deleted(&self, pod_uid: &str) -> bool {
        self.deleted_pods.lock().unwrap().contains(pod_uid)
    }

    /// A claim create whose answer was lost may have been applied.
    fn mark_uncertain(&self, pod_key: &str) {
        self.uncertain.lock().unwrap().insert(pod_key.to_string());
    }

    /// While the pod has a claim create the informer has not confirmed (created
    /// but unseen, or its answer lost), the caches cannot say which of its claims
    /// exist: the server settles it before the guest decides. Claims it shows
    /// enter the mutation cache (the guest adopts them instead of creating a
    /// second one); created claims it lacks were deleted unseen and are forgotten
    /// (the guest generates them again). Unconfirmed claims are read by name (a
    /// namespace LIST per pod was O(claims) each: quadratic at 50k pods); only a
    /// create whose answer was lost, and so has no name, needs the LIST.
    async fn verify_creations(
        &self,
        pod: &model::Pod,
        pod_key: &str,
    ) -> Result<(), ReconcileError> {
        let pending = self.expectations.get_create_expectations(pod_key);
        let uncertain = self.uncertain.lock().unwrap().contains(pod_key);
        if pending.is_empty() && !uncertain {
            return Ok(());
        }
        let owned = self.owned_claims(&pod.meta.uid);
        let unconfirmed: Vec<&model::ResourceClaim> = owned
            .iter()
            .filter(|c| pending.contains(&c.meta.uid))
            .collect();
        let api: Api<ResourceClaim> = Api::namespaced(self.ctx.client.clone(), &pod.meta.namespace);
        let read = Reads {
            api: &api,
            journal: &self.ctx.journal,
            key: pod_key,
        };
        let (live, ghosts) = if uncertain {
            read.list_controlled(pod, &unconfirmed).await?
        } else {
            read.get_each(&unconfirmed).await?
        };
        // Expectations of ghosts, and of claims neither found nor remembered.
        let gone = pending.iter().filter(|uid| {
            !live.iter().any(|l| &l.meta.uid == *uid)
                && (ghosts.iter().any(|g| &g.meta.uid == *uid)
                    || !owned.iter().any(|o| &o.meta.uid == *uid))
        });
        self.expectations.observe_creations(pod_key, gone);
        let mut cache = self.created_claims.lock().unwrap();
        for ghost in ghosts {
            cache.on_delete(ghost);
        }
        for claim in live {
            cache.mutation(claim);
        }
        drop(cache);
        self.uncertain.lock().unwrap().remove(pod_key);
        Ok(())
    }
}

/// The live reads that settle a pod's unconfirmed creations, journaled.
struct Reads<'r> {
    api: &'r Api<ResourceClaim>,
    journal: &'r Journal,
    key: &'r str,
}

type Settled<'a> = (Vec<model::ResourceClaim>, Vec<&'a model::ResourceClaim>);

impl Reads<'_> {
    /// The claims `pod` controls, from a live LIST of its namespace, and which of
    /// `unconfirmed` the list shows deleted. A claim newer than the list may
    /// simply be missing from it, so only older ones count as deleted.
    async fn list_controlled<'a>(
        &self,
        pod: &model::Pod,
        unconfirmed: &[&'a model::ResourceClaim],
    ) -> Result<Settled<'a>, ReconcileError> {
        let ns = &pod.meta.namespace;
        let result = self.api.list(&ListParams::default()).await;
        self.journal.record(Entry::read(
            NAME,
            self.key,
            "list",
            "resourceclaims",
            ns,
            "",
            &result,
        ));
        let listed = result.map_err(|source| ReconcileError::Read {
            what: format!("live LIST of resourceclaims in {ns}"),
            source,
        })?;
        let live: Vec<model::ResourceClaim> = listed
            .items
            .iter()
            .map(crate::projection::claim)
            .filter(|c| {
                c.meta
                    .controller()
                    .is_some_and(|o| o.is_pod_controller() && o.uid == pod.meta.uid)
            })
            .collect();
        let list_rv = listed
            .metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse::<u64>().ok());
        let older_than_list = |c: &model::ResourceClaim| {
            let rv = c.meta.resource_version.parse::<u64>().ok();
            matches!((rv, list_rv), (Some(rv), Some(list)) if rv <= list)
        };
        let ghosts = unconfirmed
            .iter()
            .copied()
            .filter(|c| older_than_list(c) && !live.iter().any(|l| l.meta.uid == c.meta.uid))
            .collect();
        Ok((live, ghosts))
    }

    /// Each of `unconfirmed` read by name (a GET is a current read): found, or
    /// deleted unseen (absent, or the name now holds another claim).
    async fn get_each<'a>(
        &self,
        unconfirmed: &[&'a model::ResourceClaim],
    ) -> Result<Settled<'a>, ReconcileError> {
        let (mut live, mut ghosts) = (Vec::new(), Vec::new());
        for &claim in unconfirmed {
            let (ns, name) = (&claim.meta.namespace, &claim.meta.name);
            let result = self.api.get_opt(name).await;
            self.journal.record(Entry::read(
                NAME,
                self.key,
                "get",
                "resourceclaims",
                ns,
                name,
                &result,
            ));
            let found = result
                .map_err(|source| ReconcileError::Read {
                    what: format!("GET resourceclaim {ns}/{name}"),
                    source,
                })?
                .map(|c| crate::projection::claim(&c))
                .filter(|c| c.meta.uid == claim.meta.uid);
            match found {
                Some(current) => live.push(current),
                None => ghosts.push(claim),
            }
        }
        Ok((live, ghosts))
    }
}

/// A `reservedFor` entry as the API writes it.
fn consumer_json(c: &model::ConsumerReference) -> serde_json::Value {
    let mut v = serde_json::json!({ "resource": c.resource, "name": c.name, "uid": c.uid });
    if !c.api_group.is_empty() {
        v["apiGroup"] = serde_json::json!(c.api_group);
    }
    v
}
