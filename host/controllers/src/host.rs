//! The host: reflectors feeding the caches, event handlers feeding the queues,
//! workers turning keys into decisions and writes.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceClaimTemplate};
use kube::{Api, Client};
use rekon_machinery::queue::{QueueConfig, WorkQueue};
use tokio::task::JoinHandle;

use crate::cache::{ObjectKey, reflect};
use crate::context::Context;
use crate::decider::{ClaimDecider, PvcDecider, Slot};
use crate::journal::Journal;
use crate::observe::{Observer, ReconcileResult};
use crate::projection::{self, CachedPod};
use crate::pvc_protection::PvcProtection;
use crate::reconcile::Outcome;
use crate::resource_claim::{ClaimControllerKey, ResourceClaimController};

/// How the host runs.
pub struct HostConfig {
    /// Workers per controller (one key is never reconciled twice at once).
    pub workers: usize,
    pub pvc_decider: Arc<Slot<dyn PvcDecider>>,
    pub claim_decider: Arc<Slot<dyn ClaimDecider>>,
    pub journal: Arc<Journal>,
    pub queue: QueueConfig,
    /// Metrics hooks (reconciles, decisions, queues).
    pub observer: Arc<dyn Observer>,
}

/// Keys that did not settle before a deadline.
#[derive(Debug, thiserror::Error)]
#[error("controllers did not converge; keys still pending: {}", keys.join(", "))]
pub struct NotConverged {
    pub keys: Vec<String>,
}

/// When anything last happened (cache event, reconcile), to detect quiet.
struct Activity(Mutex<Instant>);

impl Activity {
    fn touch(&self) {
        *self.0.lock().unwrap() = Instant::now();
    }

    fn quiet_for(&self) -> Duration {
        self.0.lock().unwrap().elapsed()
    }
}

pub struct Host {
    pub ctx: Arc<Context>,
    pub pvc_protection: Arc<PvcProtection>,
    pub resource_claim: Arc<ResourceClaimController>,
    pvc_queue: Arc<WorkQueue<ObjectKey>>,
    claim_queue: Arc<WorkQueue<ClaimControllerKey>>,
    reflectors: Vec<JoinHandle<()>>,
    workers: Vec<JoinHandle<()>>,
    activity: Arc<Activity>,
    /// Set at shutdown: workers take no new key.
    stopping: Arc<AtomicBool>,
}

impl Host {
    /// Starts the reflectors and the workers. Reconciles begin once the caches synced.
    pub fn start(client: Client, config: HostConfig) -> Self {
        let ctx = Arc::new(Context::new(
            client.clone(),
            config.journal,
            config.observer.clone(),
        ));
        let pvc_protection = Arc::new(PvcProtection::new(ctx.clone(), config.pvc_decider));
        let resource_claim = Arc::new(ResourceClaimController::new(
            ctx.clone(),
            config.claim_decider,
        ));
        let queue_config = |name: &str| QueueConfig {
            name: name.into(),
            ..config.queue.clone()
        };
        let pvc_queue: Arc<WorkQueue<ObjectKey>> = Arc::new(WorkQueue::with_metrics(
            queue_config(crate::pvc_protection::NAME),
            ctx.observer.queue_metrics(crate::pvc_protection::NAME),
        ));
        let claim_queue: Arc<WorkQueue<ClaimControllerKey>> = Arc::new(WorkQueue::with_metrics(
            queue_config(crate::resource_claim::NAME),
            ctx.observer.queue_metrics(crate::resource_claim::NAME),
        ));
        let activity = Arc::new(Activity(Mutex::new(Instant::now())));

        let mut reflectors = Vec::new();
        {
            let (pvcq, claimq, rc, act) = (
                pvc_queue.clone(),
                claim_queue.clone(),
                resource_claim.clone(),
                activity.clone(),
            );
            reflectors.push(tokio::spawn(reflect(
                Api::<Pod>::all(client.clone()),
                ctx.caches.pods.clone(),
                CachedPod::from_pod,
                move |change| {
                    act.touch();
                    PvcProtection::keys_for_pod(&change)
                        .into_iter()
                        .for_each(|k| pvcq.add(k));
                    rc.keys_for_pod(&change)
                        .into_iter()
                        .for_each(|k| claimq.add(k));
                },
            )));
        }
        {
            let (pvcq, act) = (pvc_queue.clone(), activity.clone());
            reflectors.push(tokio::spawn(reflect(
                Api::<PersistentVolumeClaim>::all(client.clone()),
                ctx.caches.pvcs.clone(),
                projection::pvc,
                move |change| {
                    act.touch();
                    PvcProtection::keys_for_pvc(&change)
                        .into_iter()
                        .for_each(|k| pvcq.add(k));
                },
            )));
        }
        {
            let (claimq, rc, act) = (
                claim_queue.clone(),
                resource_claim.clone(),
                activity.clone(),
            );
            reflectors.push(tokio::spawn(reflect(
                Api::<ResourceClaim>::all(client.clone()),
                ctx.caches.claims.clone(),
                projection::claim,
                move |change| {
                    act.touch();
                    rc.keys_for_claim(&change)
                        .into_iter()
                        .for_each(|k| claimq.add(k));
                },
            )));
        }
        {
            let (claimq, rc, act) = (
                claim_queue.clone(),
                resource_claim.clone(),
                activity.clone(),
            );
            reflectors.push(tokio::spawn(reflect(
                Api::<ResourceClaimTemplate>::all(client.clone()),
                ctx.caches.templates.clone(),
                projection::template,
                move |change| {
                    act.touch();
                    rc.keys_for_template(&change)
                        .into_iter()
                        .for_each(|k| claimq.add(k));
                },
            )));
        }

        let stopping = Arc::new(AtomicBool::new(false));
        let mut workers = Vec::new();
        for _ in 0..config.workers.max(1) {
            let (q, c, ctx2, act, stop) = (
                pvc_queue.clone(),
                pvc_protection.clone(),
                ctx.clone(),
                activity.clone(),
                stopping.clone(),
            );
            workers.push(tokio::spawn(async move {
                ctx2.caches.pvcs.wait_synced().await;
                ctx2.caches.pods.wait_synced().await;
                while let Some(key) = q.get().await {
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    let started = Instant::now();
                    let outcome = c.reconcile(&key, started).await;
                    ctx2.observer.reconciled(
                        crate::pvc_protection::NAME,
                        result_of(outcome),
                        started.elapsed(),
                    );
                    q.finish(&key, outcome);
                    act.touch();
                }
            }));
            let (q, c, ctx2, act, stop) = (
                claim_queue.clone(),
                resource_claim.clone(),
                ctx.clone(),
                activity.clone(),
                stopping.clone(),
            );
            workers.push(tokio::spawn(async move {
                ctx2.caches.pods.wait_synced().await;
                ctx2.caches.claims.wait_synced().await;
                ctx2.caches.templates.wait_synced().await;
                while let Some(key) = q.get().await {
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    let started = Instant::now();
                    let outcome = c.reconcile(&key).await;
                    ctx2.observer.reconciled(
                        crate::resource_claim::NAME,
                        result_of(outcome),
                        started.elapsed(),
                    );
                    q.finish(&key, outcome);
                    act.touch();
                }
            }));
        }

        Self {
            ctx,
            pvc_protection,
            resource_claim,
            pvc_queue,
            claim_queue,
            reflectors,
            workers,
            activity,
            stopping,
        }
    }

    pub fn journal(&self) -> &Journal {
        &self.ctx.journal
    }

    /// Marks "something happened now" (e.g. a client write whose watch events are
    /// still on their way), so `wait_idle` waits its quiet period from here.
    pub fn touch(&self) {
        self.activity.touch();
    }

    pub fn caches_synced(&self) -> bool {
        self.ctx.caches.all_synced()
    }

    /// Waits until the caches synced, both queues are empty with nothing in
    /// flight, no requeue is due within `requeue_bound`, and nothing happened for
    /// `quiet`. Fails after `timeout`, naming the keys still pending.
    pub async fn wait_idle(
        &self,
        quiet: Duration,
        requeue_bound: Duration,
        timeout: Duration,
    ) -> Result<(), NotConverged> {
        let deadline = Instant::now() + timeout;
        loop {
            let idle = self.caches_synced()
                && self.pvc_queue.is_idle_within(requeue_bound)
                && self.claim_queue.is_idle_within(requeue_bound)
                && self.activity.quiet_for() >= quiet;
            if idle {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let mut keys: BTreeSet<String> = BTreeSet::new();
                keys.extend(
                    self.pvc_queue
                        .pending_keys()
                        .iter()
                        .map(|k| format!("pvc-protection {k}")),
                );
                keys.extend(
                    self.claim_queue
                        .pending_keys()
                        .iter()
                        .map(|k| format!("resource-claim {k}")),
                );
                if !self.caches_synced() {
                    keys.insert("(caches not synced)".into());
                }
                return Err(NotConverged {
                    keys: keys.into_iter().collect(),
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops taking keys, lets reconciles in flight finish within `grace`, stops
    /// the watches. Queued keys are dropped: the next start finds their work again
    /// from the cluster state.
    pub async fn shutdown(self, grace: Duration) {
        self.stopping.store(true, Ordering::Release);
        self.pvc_queue.shutdown();
        self.claim_queue.shutdown();
        let workers = futures::future::join_all(self.workers);
        if tokio::time::timeout(grace, workers).await.is_err() {
            tracing::warn!(
                ?grace,
                "reconciles still running at shutdown were abandoned"
            );
        }
        for r in self.reflectors {
            r.abort();
        }
    }
}

fn result_of(outcome: Outcome) -> ReconcileResult {
    match outcome {
        Outcome::Done => ReconcileResult::Success,
        Outcome::Retry => ReconcileResult::Error,
        Outcome::RetryAfter(_) => ReconcileResult::RequeueAfter,
    }
}
