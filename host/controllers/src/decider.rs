//! Who makes the decisions: a guest component (or, in tests and benches, the
//! same logic linked natively), behind one trait generic over the WIT world.
//!
//! Controllers only see [`Decider<W>`]. The active implementation sits in a
//! [`Slot`] (an atomic pointer), so a new module version is published with one
//! store and decisions in flight finish on the version they loaded.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use rekon_contract::WitWorld;
use rekon_runtime::GuestWorld;
use tokio::sync::watch;

use crate::budget::{SHADOW_DIFFERENCE_BYTES, SHADOW_RETAINED_BYTES, bounded_json, cut};
use crate::observe::DecisionFailure;
use crate::pool::ShadowPool;

/// Which module made a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestInfo {
    pub name: String,
    /// `sha256:<hex>` of the module, or `native` for linked-in logic.
    pub digest: String,
}

/// A decision that produced no result: trap, deadline, memory cap, bad module.
#[derive(Debug, Clone, thiserror::Error)]
#[error("guest {guest}: {message}")]
pub struct DecideError {
    pub guest: String,
    pub message: String,
    pub failure: DecisionFailure,
}

/// Makes the decisions of world `W`. Blocking: the host calls it on its
/// decision pool, never on an async worker.
pub trait Decider<W: WitWorld>: Send + Sync {
    fn info(&self) -> GuestInfo;
    fn decide(&self, key: &str, input: W::Input) -> Result<W::Decision, DecideError>;
}

/// The active decider of one controller, swappable while decisions run.
pub struct Slot<W: WitWorld> {
    decider: ArcSwap<Arc<dyn Decider<W>>>,
    /// Why no decider was published yet; `None` once one was.
    missing: watch::Sender<Option<String>>,
}

impl<W: WitWorld> Slot<W> {
    pub fn new(decider: Arc<dyn Decider<W>>) -> Self {
        Self {
            decider: ArcSwap::from_pointee(decider),
            missing: watch::Sender::new(None),
        }
    }

    /// A slot nothing was published to yet, because of `reason`: the host
    /// starts its controller at the first [`Slot::swap`].
    pub fn missing(reason: impl Into<String>) -> Self {
        Self {
            decider: ArcSwap::from_pointee(
                Arc::new(NoModule("no decision module loaded".into())) as Arc<dyn Decider<W>>
            ),
            missing: watch::Sender::new(Some(reason.into())),
        }
    }

    /// Updates why nothing was published yet (no effect once something was).
    pub fn set_missing(&self, reason: &str) {
        self.missing.send_if_modified(|missing| match missing {
            Some(old) if old != reason => {
                *old = reason.to_owned();
                true
            }
            _ => false,
        });
    }

    /// Nothing serves any more, because of `reason`: every decision from now
    /// on fails with it (decisions in flight finish on what they loaded).
    pub fn withdraw(&self, reason: &str) {
        self.decider.store(Arc::new(Arc::new(NoModule(format!(
            "no decision module serves this world: {reason}"
        ))) as Arc<dyn Decider<W>>));
    }

    /// The decider to use for one whole decision (kept even if a swap happens).
    pub fn current(&self) -> Arc<dyn Decider<W>> {
        Arc::clone(&self.decider.load())
    }

    /// Publishes a new decider; returns the previous one.
    pub fn swap(&self, decider: Arc<dyn Decider<W>>) -> Arc<dyn Decider<W>> {
        let previous: Arc<dyn Decider<W>> = Arc::clone(&self.decider.swap(Arc::new(decider)));
        self.missing
            .send_if_modified(|missing| missing.take().is_some());
        previous
    }
}

/// What the host asks of a slot whatever its world.
pub trait AnySlot: Any + Send + Sync {
    /// Why no decider was published yet (`None` once one was), watched.
    fn missing(&self) -> watch::Receiver<Option<String>>;
}

impl<W: WitWorld> AnySlot for Slot<W> {
    fn missing(&self) -> watch::Receiver<Option<String>> {
        self.missing.subscribe()
    }
}

/// What a slot holds while no module serves: before anything is published
/// (its controller is not started until then, so nothing calls it), or once
/// the module was withdrawn. Decisions fail, saying why.
struct NoModule(String);

impl<W: WitWorld> Decider<W> for NoModule {
    fn info(&self) -> GuestInfo {
        GuestInfo {
            name: "none".into(),
            digest: "none".into(),
        }
    }

    fn decide(&self, _key: &str, _input: W::Input) -> Result<W::Decision, DecideError> {
        Err(DecideError {
            guest: "none".into(),
            message: self.0.clone(),
            failure: DecisionFailure::Other,
        })
    }
}

/// The slots of every world, by world: what the host gives its controllers.
#[derive(Clone, Default)]
pub struct Deciders(HashMap<&'static str, Arc<dyn AnySlot>>);

impl Deciders {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the slot of world `W`.
    pub fn insert<W: WitWorld>(&mut self, slot: Arc<Slot<W>>) {
        self.0.insert(W::NAME, slot);
    }

    /// Builder form of [`Self::insert`].
    pub fn with<W: WitWorld>(mut self, slot: Arc<Slot<W>>) -> Self {
        self.insert(slot);
        self
    }

    /// The slot of world `W`, if one was given.
    pub fn get<W: WitWorld>(&self) -> Option<Arc<Slot<W>>> {
        let slot: Arc<dyn AnySlot> = Arc::clone(self.0.get(W::NAME)?);
        (slot as Arc<dyn Any + Send + Sync>)
            .downcast::<Slot<W>>()
            .ok()
    }

    /// Why world `world`'s slot has no decider yet, watched; `None` without a slot.
    pub fn missing(&self, world: &str) -> Option<watch::Receiver<Option<String>>> {
        self.0.get(world).map(|slot| slot.missing())
    }

    /// Why no world has a decider, world by world; `None` once any world is
    /// served (readiness: an install with nothing to serve says why).
    pub fn nothing_served(&self) -> Option<String> {
        let mut worlds: Vec<_> = self.0.iter().collect();
        worlds.sort_by_key(|(world, _)| **world);
        let mut reasons = Vec::new();
        for (world, slot) in worlds {
            match slot.missing().borrow().clone() {
                None => return None,
                Some(why) => reasons.push(format!("{world}: {why}")),
            }
        }
        Some(format!(
            "no decision module serves any world ({})",
            reasons.join("; ")
        ))
    }
}

/// The reference logic linked into the host: same decisions, no sandbox. Only
/// with the `native` feature (benches and tests compare wasm against it). Each
/// controller decides natively in its folder's `native.rs`.
#[cfg(feature = "native")]
pub struct Native;

#[cfg(feature = "native")]
impl Native {
    /// How a native decision of controller `name` names its guest.
    pub(crate) fn info(name: &str) -> GuestInfo {
        GuestInfo {
            name: name.to_string(),
            digest: "native".to_string(),
        }
    }
}

/// A runtime failure as the controllers see it, naming the key.
pub fn guest_error(key: &str, err: rekon_runtime::RuntimeError) -> DecideError {
    use rekon_runtime::Failure;
    let failure = match &err.failure {
        // An oversized result is the module's fault, as a trap is.
        Failure::Trap { .. } | Failure::ResultTooLarge { .. } => DecisionFailure::Trap,
        Failure::DeadlineExceeded(_) => DecisionFailure::Deadline,
        Failure::MemoryCapExceeded { .. } => DecisionFailure::Memory,
        _ => DecisionFailure::Other,
    };
    DecideError {
        guest: err.guest.name().to_string(),
        message: err.with_key(key).to_string(),
        failure,
    }
}

/// A loaded component decides (a fresh, limited store per decision).
impl<W: GuestWorld> Decider<W> for rekon_runtime::GuestPre {
    fn info(&self) -> GuestInfo {
        GuestInfo {
            name: self.id().name().to_string(),
            digest: self.id().digest().to_string(),
        }
    }

    fn decide(&self, key: &str, input: W::Input) -> Result<W::Decision, DecideError> {
        rekon_runtime::GuestPre::decide::<W>(self, input).map_err(|e| guest_error(key, e))
    }
}

/// One decision on which a shadow decider disagreed with the active one.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ShadowDifference {
    /// The WIT function: `decide`, `decide-pod`, `decide-claim`, ...
    pub decision: &'static str,
    pub key: String,
    /// The applied decision (model serde form).
    pub active: serde_json::Value,
    /// The shadow's decision, or `{"error": ...}` when it failed.
    pub shadow: serde_json::Value,
}
/// How one shadow decision compared with the active one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShadowVerdict {
    Agreed,
    Differed,
    /// The shadow trapped, overran its deadline or memory cap.
    Failed,
    /// Not run: the shadow budget ([`ShadowPool`]) was full.
    Dropped,
}

/// Counts of a shadow's decisions, and the latest differences.
///
/// Shared by every decision that runs with the same shadow, so a team can read
/// how often the candidate agreed before promoting it.
pub struct ShadowTally {
    agreed: AtomicU64,
    differed: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
    /// How many differences to keep (oldest dropped first), within
    /// [`SHADOW_RETAINED_BYTES`].
    keep: usize,
    /// Bytes of differences to keep at most (oldest dropped first).
    retained_bytes: usize,
    /// The differences kept, each with its size in bytes.
    differences: Mutex<VecDeque<(usize, ShadowDifference)>>,
    /// Told every verdict (metrics).
    hook: Option<Box<dyn Fn(ShadowVerdict) + Send + Sync>>,
}

impl ShadowTally {
    pub fn new(keep: usize) -> Self {
        Self {
            agreed: AtomicU64::new(0),
            differed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            keep,
            retained_bytes: SHADOW_RETAINED_BYTES,
            differences: Mutex::new(VecDeque::new()),
            hook: None,
        }
    }

    /// Keeps up to `bytes` of differences instead of [`SHADOW_RETAINED_BYTES`]
    /// (a finite run such as `rekon diff` may keep them all).
    #[must_use]
    pub fn retaining_bytes(mut self, bytes: usize) -> Self {
        self.retained_bytes = bytes;
        self
    }

    /// Also tells `hook` every verdict.
    pub fn with_hook(mut self, hook: Box<dyn Fn(ShadowVerdict) + Send + Sync>) -> Self {
        self.hook = Some(hook);
        self
    }

    fn count(&self, verdict: ShadowVerdict) {
        let counter = match verdict {
            ShadowVerdict::Agreed => &self.agreed,
            ShadowVerdict::Differed => &self.differed,
            ShadowVerdict::Failed => &self.failed,
            ShadowVerdict::Dropped => &self.dropped,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if let Some(hook) = &self.hook {
            hook(verdict);
        }
    }

    /// Decisions on which the shadow returned exactly the active decision.
    pub fn agreed(&self) -> u64 {
        self.agreed.load(Ordering::Relaxed)
    }

    /// Decisions on which both returned a decision and they differed.
    pub fn differed(&self) -> u64 {
        self.differed.load(Ordering::Relaxed)
    }

    /// Decisions on which the shadow failed (trap, deadline, ...) and the active did not.
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    /// Decisions the shadow did not see because its budget was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The latest differences and shadow failures, oldest first.
    pub fn differences(&self) -> Vec<ShadowDifference> {
        let differences = self.differences.lock().unwrap();
        differences.iter().map(|(_, d)| d.clone()).collect()
    }

    fn remember(&self, difference: ShadowDifference) {
        if self.keep == 0 {
            return;
        }
        let size = difference.key.len()
            + difference.active.to_string().len()
            + difference.shadow.to_string().len();
        let mut differences = self.differences.lock().unwrap();
        let mut retained: usize = differences.iter().map(|(bytes, _)| bytes).sum();
        while differences.len() >= self.keep || retained.saturating_add(size) > self.retained_bytes
        {
            let Some((bytes, _)) = differences.pop_front() else {
                break;
            };
            retained -= bytes;
        }
        differences.push_back((size, difference));
    }

    /// Compares one decision; only the active result is returned to the caller.
    fn compare<D: PartialEq + serde::Serialize>(
        &self,
        decision: &'static str,
        key: &str,
        active: &Result<D, DecideError>,
        shadow: Result<D, DecideError>,
        guests: (&GuestInfo, &GuestInfo),
    ) {
        // A failed active decision is retried; there is nothing to compare it with.
        let Ok(active) = active else { return };
        // Each side within half the per-difference budget, whatever its size.
        let to_json = |d: &D| bounded_json(d, SHADOW_DIFFERENCE_BYTES / 2);
        let shadow_json = match shadow {
            Ok(shadow) if shadow == *active => {
                self.count(ShadowVerdict::Agreed);
                return;
            }
            Ok(shadow) => {
                self.count(ShadowVerdict::Differed);
                to_json(&shadow)
            }
            Err(err) => {
                self.count(ShadowVerdict::Failed);
                serde_json::json!({ "error": cut(&err.message, SHADOW_DIFFERENCE_BYTES / 2) })
            }
        };
        let difference = ShadowDifference {
            decision,
            key: key.to_string(),
            active: to_json(active),
            shadow: shadow_json,
        };
        tracing::warn!(
            key,
            decision,
            active_guest = %guests.0.name,
            active_digest = %guests.0.digest,
            shadow_guest = %guests.1.name,
            shadow_digest = %guests.1.digest,
            active = %crate::budget::logged(&difference.active),
            shadow = %crate::budget::logged(&difference.shadow),
            "shadow decision differs from the active one"
        );
        self.remember(difference);
    }
}

/// Runs a candidate beside the active decider on the same input and applies
/// only the active result: the shadow can neither change nor fail a decision.
/// With a [`ShadowPool`] the candidate runs there, after the active decision
/// returned, so it cannot slow decisions down either; a full pool drops it.
pub struct Shadowed<W: WitWorld> {
    active: Arc<dyn Decider<W>>,
    shadow: Arc<dyn Decider<W>>,
    tally: Arc<ShadowTally>,
    pool: Option<Arc<ShadowPool>>,
}

impl<W: WitWorld> Shadowed<W> {
    pub fn new(
        active: Arc<dyn Decider<W>>,
        shadow: Arc<dyn Decider<W>>,
        tally: Arc<ShadowTally>,
    ) -> Self {
        Self {
            active,
            shadow,
            tally,
            pool: None,
        }
    }

    /// Runs the shadow on `pool` instead of inline.
    #[must_use]
    pub fn on_pool(mut self, pool: Arc<ShadowPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    pub fn tally(&self) -> &Arc<ShadowTally> {
        &self.tally
    }
}

impl<W: WitWorld> Decider<W> for Shadowed<W> {
    fn info(&self) -> GuestInfo {
        self.active.info()
    }

    fn decide(&self, key: &str, input: W::Input) -> Result<W::Decision, DecideError> {
        let function = W::function(&input);
        let active = self.active.decide(key, input.clone());
        let Some(pool) = &self.pool else {
            let shadow = self.shadow.decide(key, input);
            let guests = (&self.active.info(), &self.shadow.info());
            self.tally.compare(function, key, &active, shadow, guests);
            return active;
        };
        // A failed active decision is retried; there is nothing to compare with.
        let Ok(applied) = &active else { return active };
        let (applied, key_owned) = (Ok(applied.clone()), key.to_string());
        let (shadow, tally, info) = (self.shadow.clone(), self.tally.clone(), self.active.info());
        let queued = pool.try_run(move || {
            let decided = shadow.decide(&key_owned, input);
            tally.compare(
                function,
                &key_owned,
                &applied,
                decided,
                (&info, &shadow.info()),
            );
        });
        if !queued {
            self.tally.count(ShadowVerdict::Dropped);
            tracing::warn!(
                key,
                shadow_guest = %self.shadow.info().name,
                "shadow decision dropped: the shadow budget is full"
            );
        }
        active
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rekon_contract::PvcProtectionWorld as Pvc;
    use rekon_guest::model::{PvcAction, PvcDecision, PvcInput};

    /// Decides a fixed answer, or fails.
    struct Fixed(Result<PvcDecision, &'static str>, &'static str);

    impl Decider<Pvc> for Fixed {
        fn info(&self) -> GuestInfo {
            GuestInfo {
                name: self.1.into(),
                digest: "fixed".into(),
            }
        }

        fn decide(&self, _key: &str, _input: PvcInput) -> Result<PvcDecision, DecideError> {
            self.0.clone().map_err(|message| DecideError {
                guest: self.1.into(),
                message: message.into(),
                failure: DecisionFailure::Trap,
            })
        }
    }

    fn shadowed(active: Fixed, shadow: Fixed) -> (Shadowed<Pvc>, Arc<ShadowTally>) {
        let tally = Arc::new(ShadowTally::new(2));
        let active: Arc<dyn Decider<Pvc>> = Arc::new(active);
        let shadow: Arc<dyn Decider<Pvc>> = Arc::new(shadow);
        (Shadowed::new(active, shadow, tally.clone()), tally)
    }

    fn add() -> PvcAction {
        PvcAction::AddFinalizer(Default::default())
    }

    #[test]
    fn only_the_active_decision_is_applied_and_each_outcome_is_counted() {
        let (agreeing, tally) = shadowed(
            Fixed(Ok(PvcDecision::NeedLivePods), "a"),
            Fixed(Ok(PvcDecision::NeedLivePods), "s"),
        );
        assert_eq!(
            agreeing.decide("ns/a", PvcInput::default()).unwrap(),
            PvcDecision::NeedLivePods
        );
        assert_eq!(
            (tally.agreed(), tally.differed(), tally.failed()),
            (1, 0, 0)
        );

        let (differing, tally) = shadowed(
            Fixed(Ok(PvcDecision::Actions(vec![add()])), "a"),
            Fixed(Ok(PvcDecision::Actions(vec![])), "s"),
        );
        assert_eq!(
            differing.decide("ns/b", PvcInput::default()).unwrap(),
            PvcDecision::Actions(vec![add()])
        );
        assert_eq!(
            (tally.agreed(), tally.differed(), tally.failed()),
            (0, 1, 0)
        );
        let difference = &tally.differences()[0];
        assert_eq!(difference.key, "ns/b");
        assert_eq!(
            difference.active,
            serde_json::to_value(PvcDecision::Actions(vec![add()])).unwrap()
        );
        assert_eq!(difference.shadow, serde_json::json!({"actions": []}));
        assert_eq!(
            differing.info().name,
            "a",
            "the journal names the active guest"
        );
    }

    #[test]
    fn a_failing_shadow_never_fails_the_decision() {
        let (shadowed, tally) = shadowed(
            Fixed(Ok(PvcDecision::NeedLivePods), "a"),
            Fixed(Err("trapped"), "s"),
        );
        assert_eq!(
            shadowed.decide("ns/c", PvcInput::default()).unwrap(),
            PvcDecision::NeedLivePods
        );
        assert_eq!(
            (tally.agreed(), tally.differed(), tally.failed()),
            (0, 0, 1)
        );
        assert_eq!(
            tally.differences()[0].shadow,
            serde_json::json!({"error": "trapped"})
        );
    }

    #[test]
    fn a_failing_active_is_returned_and_not_compared() {
        let (shadowed, tally) = shadowed(
            Fixed(Err("trapped"), "a"),
            Fixed(Ok(PvcDecision::NeedLivePods), "s"),
        );
        assert!(shadowed.decide("ns/d", PvcInput::default()).is_err());
        assert_eq!(
            (tally.agreed(), tally.differed(), tally.failed()),
            (0, 0, 0)
        );
    }

    #[test]
    fn the_hook_hears_every_verdict() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = heard.clone();
        let tally = Arc::new(
            ShadowTally::new(0).with_hook(Box::new(move |v| sink.lock().unwrap().push(v))),
        );
        let active: Arc<dyn Decider<Pvc>> = Arc::new(Fixed(Ok(PvcDecision::NeedLivePods), "a"));
        for shadow in [
            Ok(PvcDecision::NeedLivePods),
            Ok(PvcDecision::Actions(vec![])),
            Err("x"),
        ] {
            let shadow: Arc<dyn Decider<Pvc>> = Arc::new(Fixed(shadow, "s"));
            Shadowed::new(active.clone(), shadow, tally.clone())
                .decide("k", PvcInput::default())
                .unwrap();
        }
        use ShadowVerdict::*;
        assert_eq!(*heard.lock().unwrap(), [Agreed, Differed, Failed]);
        assert!(tally.differences().is_empty(), "keep 0 keeps none");
    }

    /// Decides after `0` (a guest taking its time).
    struct Sleeps(std::time::Duration);

    impl Decider<Pvc> for Sleeps {
        fn info(&self) -> GuestInfo {
            GuestInfo {
                name: "sleeps".into(),
                digest: "sleeps".into(),
            }
        }

        fn decide(&self, _key: &str, _input: PvcInput) -> Result<PvcDecision, DecideError> {
            std::thread::sleep(self.0);
            Ok(PvcDecision::NeedLivePods)
        }
    }

    /// The p99 latency of 100 decisions of `other` on `pool` while four loops
    /// keep deciding with `busy` on the same pool.
    async fn p99_beside(
        pool: &Arc<crate::pool::DecisionPool>,
        other: &Arc<dyn Decider<Pvc>>,
        busy: Arc<dyn Decider<Pvc>>,
    ) -> std::time::Duration {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let loops: Vec<_> = (0..4)
            .map(|_| {
                let (pool, busy, stop) = (pool.clone(), busy.clone(), stop.clone());
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        let _ = pool
                            .decide(busy.clone(), "ns/busy", PvcInput::default())
                            .await;
                        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                    }
                })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let mut latencies = Vec::new();
        for _ in 0..100 {
            let started = std::time::Instant::now();
            pool.decide(other.clone(), "ns/other", PvcInput::default())
                .await
                .unwrap();
            latencies.push(started.elapsed());
        }
        stop.store(true, Ordering::Relaxed);
        for task in loops {
            task.await.unwrap();
        }
        latencies.sort();
        latencies[98]
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_slow_shadow_on_its_own_budget_keeps_another_worlds_latency() {
        // Two permits, as on a two-core machine.
        let pool = Arc::new(crate::pool::DecisionPool::new(2));
        let other: Arc<dyn Decider<Pvc>> = Arc::new(Sleeps(std::time::Duration::from_millis(5)));
        let active: Arc<dyn Decider<Pvc>> = Arc::new(Fixed(Ok(PvcDecision::NeedLivePods), "a"));
        let alone = p99_beside(&pool, &other, active.clone()).await;

        let tally = Arc::new(ShadowTally::new(0));
        let slow: Arc<dyn Decider<Pvc>> = Arc::new(Sleeps(std::time::Duration::from_millis(200)));
        let shadowed =
            Shadowed::new(active, slow, tally.clone()).on_pool(Arc::new(ShadowPool::new(1, 2)));
        let beside_shadow = p99_beside(&pool, &other, Arc::new(shadowed)).await;
        assert!(
            beside_shadow <= alone * 2,
            "p99 {beside_shadow:?} beside a slow shadow, {alone:?} without"
        );
        assert!(tally.dropped() > 0, "a full shadow budget drops decisions");
        assert!(
            tally.agreed() >= 1,
            "the shadow still decides within its budget"
        );
    }

    #[test]
    fn keeps_only_the_latest_differences() {
        let (shadowed, tally) = shadowed(
            Fixed(Ok(PvcDecision::NeedLivePods), "a"),
            Fixed(Err("x"), "s"),
        );
        for key in ["k1", "k2", "k3"] {
            shadowed.decide(key, PvcInput::default()).unwrap();
        }
        let keys: Vec<_> = tally.differences().into_iter().map(|d| d.key).collect();
        assert_eq!(keys, ["k2", "k3"]);
        assert_eq!(tally.failed(), 3);
    }

    #[test]
    fn shadow_differences_are_kept_within_a_byte_budget() {
        use crate::budget::{SHADOW_DIFFERENCE_BYTES, SHADOW_RETAINED_BYTES};
        let tally = ShadowTally::new(100);
        let big = PvcDecision::Actions(vec![
            PvcAction::AddFinalizer(rekon_guest::model::Target {
                name: "x".repeat(10_000),
                ..Default::default()
            });
            100
        ]);
        let info = GuestInfo {
            name: "g".into(),
            digest: "d".into(),
        };
        for _ in 0..100 {
            tally.compare(
                "decide",
                "ns/a",
                &Ok(PvcDecision::Actions(vec![])),
                Ok(big.clone()),
                (&info, &info),
            );
        }
        assert_eq!(tally.differed(), 100);
        let kept = tally.differences();
        assert!(!kept.is_empty());
        let size = |d: &ShadowDifference| d.active.to_string().len() + d.shadow.to_string().len();
        assert!(
            kept.iter()
                .all(|d| size(d) <= SHADOW_DIFFERENCE_BYTES + 256)
        );
        let total: usize = kept.iter().map(size).sum();
        assert!(total <= SHADOW_RETAINED_BYTES, "{total} bytes kept");
    }
}
