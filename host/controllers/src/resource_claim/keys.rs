//! Work-queue keys of the resource-claim controller: `pod:<ns>/<name>` and
//! `claim:<ns>/<name>` share one queue (upstream-behaviour §3), and which keys
//! each watch event enqueues (§3.3, by the rules of `rules.rs`).

use std::fmt;
use std::sync::Arc;

use rekon_guest::model;

use super::ResourceClaimController;
use super::rules::{self, ClaimWork, Lookup};
use crate::cache::{Change, ObjectKey};
use crate::events::EventKind;
use crate::projection::{
    ALLOCATED, CLAIMS_BY_ALLOCATION, CachedPod, PODS_BY_CLAIM, PODS_BY_TEMPLATE,
};

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClaimControllerKey {
    Pod(ObjectKey),
    Claim(ObjectKey),
}

impl ClaimControllerKey {
    pub fn object(&self) -> &ObjectKey {
        match self {
            Self::Pod(k) | Self::Claim(k) => k,
        }
    }
}

impl fmt::Display for ClaimControllerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Pod(k) => write!(f, "pod:{k}"),
            Self::Claim(k) => write!(f, "claim:{k}"),
        }
    }
}

impl fmt::Debug for ClaimControllerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl ResourceClaimController {
    fn lookup(
        &self,
        namespace: &str,
    ) -> impl FnMut(&str) -> Lookup<Arc<model::ResourceClaim>> + '_ {
        let namespace = namespace.to_string();
        move |name| match self
            .ctx
            .caches
            .claims
            .get(&ObjectKey::new(namespace.as_str(), name))
        {
            Some(claim) => Lookup::Found(claim),
            None => Lookup::NotFound,
        }
    }

    fn keys(&self, work: ClaimWork) -> Vec<ClaimControllerKey> {
        if let Some(uid) = work.deleted_pod_uid {
            self.deleted_pods.lock().unwrap().insert(uid);
        }
        let claims = work.claims.into_iter().map(ClaimControllerKey::Claim);
        claims
            .chain(work.pods.into_iter().map(ClaimControllerKey::Pod))
            .collect()
    }

    /// Keys a pod event enqueues: its claims when it no longer needs them, the pod
    /// when it needs claims created or reserved.
    pub fn keys_for_pod(&self, change: &Change<CachedPod>) -> Vec<ClaimControllerKey> {
        let (pod, deleted) = match change {
            Change::Applied { new, .. } => (&new.pod, false),
            Change::Deleted(old) => (&old.pod, true),
        };
        if deleted {
            let pod_key = format!("pod:{}/{}", pod.meta.namespace, pod.meta.name);
            self.expectations.delete_expectations(&pod_key);
            self.uncertain.lock().unwrap().remove(&pod_key);
        }
        let mut work = rules::work_for_pod_event(pod, deleted, self.lookup(&pod.meta.namespace));
        if deleted || pod.is_done() {
            // A claim generated for the pod but not (yet) named by its status —
            // the status write lost a race with the pod finishing — is found
            // through its owner only; without this it would never be deleted.
            for claim in self.owned_claims(&pod.meta.uid) {
                let key = ObjectKey::of(&claim.meta);
                if !work.claims.contains(&key) {
                    work.claims.push(key);
                }
            }
        }
        self.keys(work)
    }

    /// Keys a claim event enqueues: the claim itself on add/update (never on delete
    /// — the #132334 regression inverted this), and the pods that reference it.
    pub fn keys_for_claim(&self, change: &Change<model::ResourceClaim>) -> Vec<ClaimControllerKey> {
        let (claim, kind) = match change {
            Change::Applied { old: None, new } => (new, EventKind::Added),
            Change::Applied { new, .. } => (new, EventKind::Updated),
            Change::Deleted(old) => (old, EventKind::Deleted),
        };
        self.metrics.set_claims(
            self.ctx.caches.claims.len(),
            self.ctx
                .caches
                .claims
                .count_by_index(CLAIMS_BY_ALLOCATION, ALLOCATED),
        );
        let confirmed = if kind == EventKind::Deleted {
            self.forget_claim(claim);
            None
        } else {
            self.observe_claim(claim)
        };
        let key = ObjectKey::of(&claim.meta).to_string();
        let pods = self.ctx.caches.pods.by_index(PODS_BY_CLAIM, &key);
        let work = rules::work_for_claim_event(
            kind,
            claim,
            pods.iter().map(|p| &p.pod),
            self.lookup(&claim.meta.namespace),
        );
        let mut keys = self.keys(work);
        keys.extend(confirmed.map(ClaimControllerKey::Pod));
        keys
    }

    /// A template add enqueues the pods that reference it (PR #135983).
    pub fn keys_for_template(
        &self,
        change: &Change<model::ResourceClaimTemplate>,
    ) -> Vec<ClaimControllerKey> {
        let Change::Applied { old: None, new } = change else {
            return Vec::new();
        };
        let pods = self
            .ctx
            .caches
            .pods
            .by_index(PODS_BY_TEMPLATE, &ObjectKey::of(&new.meta).to_string());
        rules::pods_for_template_add(new, pods.iter().map(|p| &p.pod))
            .into_iter()
            .map(ClaimControllerKey::Pod)
            .collect()
    }
}
