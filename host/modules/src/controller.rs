//! The module versions of one controller (a dedicated world's, or a controller
//! module's): what serves, what runs in shadow, what a rollback returns to,
//! and the rules for changing them. Publishing is one store into the
//! controller's [`Slot`]; decisions in flight keep the decider they took.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use rekon_contract::{BindWorld, ControllerWorld, WorldVisitor};
use rekon_controllers::decider::{Decider, Deciders, ShadowTally, Shadowed, Slot};
use rekon_controllers::pool::ShadowPool;
use rekon_runtime::{GuestWorld, World};

use crate::canary::{self, CanaryFailure};

use crate::config::{AutoPromote, AutoRollback, Mode, PromotionVerdict};
use crate::digest::ModuleDigest;
use crate::observe::ModulesObserver;
use crate::report::ModuleEvent;
use crate::served::{Guard, RecentInputs, Served};
use crate::source::{ControllerPlan, Fingerprint};
use crate::status::{ControllerStatus, Promotion, VersionStatus};
use crate::version::ModuleVersion;

/// The slot a controller of the host reads its decider from, and the inputs
/// it decided recently (the canary), whatever its world.
pub trait WorldSlot: Send + Sync {
    /// Publishes `serving` (beside `shadow`), counted by `guard`.
    fn publish(&self, serving: &Arc<ModuleVersion>, shadow: Option<&Shadow>, guard: Arc<Guard>);
    /// Decides the recent inputs on `version`. Blocking.
    fn replay(&self, version: &ModuleVersion) -> Result<usize, CanaryFailure>;
    /// Adds this slot to the host's deciders.
    fn insert_into(&self, deciders: &mut Deciders);
    /// Nothing serves yet, because of `reason` (the host says so until one does).
    fn missing(&self, reason: &str);
    /// Nothing serves any more, because of `reason`: decisions fail with it.
    fn withdraw(&self, reason: &str);
}

struct TypedSlot<W: GuestWorld> {
    slot: Arc<Slot<W>>,
    recent: Arc<RecentInputs<W>>,
    shadows: Arc<ShadowPool>,
}

impl<W: GuestWorld> TypedSlot<W> {
    fn empty(recent_inputs: usize, shadows: Arc<ShadowPool>) -> Arc<dyn WorldSlot> {
        Self::around(
            Arc::new(Slot::missing("no module loaded yet")),
            recent_inputs,
            shadows,
        )
    }

    fn around(
        slot: Arc<Slot<W>>,
        recent_inputs: usize,
        shadows: Arc<ShadowPool>,
    ) -> Arc<dyn WorldSlot> {
        Arc::new(Self {
            slot,
            recent: Arc::new(RecentInputs::new(recent_inputs)),
            shadows,
        })
    }
}

impl<W: GuestWorld> WorldSlot for TypedSlot<W> {
    fn publish(&self, serving: &Arc<ModuleVersion>, shadow: Option<&Shadow>, guard: Arc<Guard>) {
        let serving: Arc<dyn Decider<W>> = serving.clone();
        let inner: Arc<dyn Decider<W>> = match shadow {
            Some(s) => Arc::new(
                Shadowed::new(
                    serving,
                    s.version.clone() as Arc<dyn Decider<W>>,
                    s.tally.clone(),
                )
                .on_pool(self.shadows.clone()),
            ),
            None => serving,
        };
        self.slot
            .swap(Arc::new(Served::new(inner, guard, self.recent.clone())));
    }

    fn replay(&self, version: &ModuleVersion) -> Result<usize, CanaryFailure> {
        canary::replay::<W>(version, &self.recent.snapshot())
    }

    fn insert_into(&self, deciders: &mut Deciders) {
        deciders.insert(self.slot.clone());
    }

    fn missing(&self, reason: &str) {
        self.slot.set_missing(reason);
    }

    fn withdraw(&self, reason: &str) {
        self.slot.withdraw(reason);
    }
}

/// The empty slot of `world`, typed by the contract's list of worlds.
fn slot_for(world: World, recent_inputs: usize, shadows: Arc<ShadowPool>) -> Arc<dyn WorldSlot> {
    struct Find {
        world: World,
        recent_inputs: usize,
        shadows: Arc<ShadowPool>,
        slot: Option<Arc<dyn WorldSlot>>,
    }
    impl WorldVisitor for Find {
        fn visit<W: BindWorld>(&mut self) {
            if W::NAME == self.world.name() {
                self.slot = Some(TypedSlot::<W>::empty(
                    self.recent_inputs,
                    self.shadows.clone(),
                ));
            }
        }
    }
    let mut find = Find {
        world,
        recent_inputs,
        shadows,
        slot: None,
    };
    rekon_contract::visit_worlds(&mut find);
    find.slot.expect("every World comes from visit_worlds")
}

/// What a version's guard calls when automatic rollback is due, with the
/// decisions and failures counted.
pub type Trip = Box<dyn Fn(u64, u64) + Send + Sync>;

/// Makes the [`Trip`] of a publication, given its serial, so that a late trip
/// of a replaced version is ignored.
pub type TripFactory<'a> = &'a dyn Fn(u64) -> Trip;

struct Active {
    version: Arc<ModuleVersion>,
    guard: Arc<Guard>,
    since: DateTime<Utc>,
}

#[derive(Clone)]
pub struct Shadow {
    version: Arc<ModuleVersion>,
    tally: Arc<ShadowTally>,
}

#[derive(Default)]
struct State {
    /// Increments at every publication.
    serial: u64,
    /// The plan serving now, and the last plan refused (not retried until it changes).
    applied: Option<Fingerprint>,
    refused: Option<String>,
    active: Option<Active>,
    shadow: Option<Shadow>,
    fallback: Option<Arc<ModuleVersion>>,
    policy: Option<AutoRollback>,
    promote: Option<AutoPromote>,
    /// The promotion of the applied plan's shadow, with its evidence.
    promoted: Option<Promotion>,
    /// Why the shadow of the applied plan will not be promoted.
    promotion_stopped: Option<String>,
    /// Since the last commit: the automatic rollback that happened, and the
    /// digest it rolled back from.
    rolled_back: Option<(String, ModuleDigest)>,
    mode: Mode,
    pinned: bool,
    /// Versions rolled back automatically: never served again by this process.
    blocked: BTreeSet<ModuleDigest>,
    swaps: u64,
    rejections: u64,
    rollbacks: u64,
    last_error: Option<(String, DateTime<Utc>)>,
}

pub struct Controller {
    world: World,
    /// The world's name, or the controller module's: events and metrics name it.
    name: String,
    slot: Arc<dyn WorldSlot>,
    shadow_differences_kept: usize,
    observer: Arc<dyn ModulesObserver>,
    state: Mutex<State>,
}

/// What [`Controller::prepare`] decided.
pub enum Preparation {
    /// The plan is what serves already (or was refused already).
    Unchanged,
    Refused(String),
    /// Load these and then [`Controller::commit`].
    Load(Box<ControllerPlan>),
}

impl Controller {
    pub fn new(
        world: World,
        recent_inputs: usize,
        shadow_differences_kept: usize,
        observer: Arc<dyn ModulesObserver>,
        shadows: Arc<ShadowPool>,
    ) -> Self {
        Self {
            world,
            name: world.name().to_string(),
            slot: slot_for(world, recent_inputs, shadows),
            shadow_differences_kept,
            observer,
            state: Mutex::new(State::default()),
        }
    }

    /// The versions of controller module `name`, published into `slot` (the
    /// slot its generic controller decides from). No canary replay: a new
    /// version re-decides every key instead.
    pub fn for_module(
        name: &str,
        slot: Arc<Slot<ControllerWorld>>,
        shadow_differences_kept: usize,
        observer: Arc<dyn ModulesObserver>,
        shadows: Arc<ShadowPool>,
    ) -> Self {
        Self {
            world: World::of::<ControllerWorld>(),
            name: name.to_string(),
            slot: TypedSlot::around(slot, 0, shadows),
            shadow_differences_kept,
            observer,
            state: Mutex::new(State::default()),
        }
    }

    pub fn world(&self) -> World {
        self.world
    }

    /// The world's name, or the controller module's.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn slot(&self) -> &Arc<dyn WorldSlot> {
        &self.slot
    }

    pub fn is_serving(&self) -> bool {
        self.state.lock().unwrap().active.is_some()
    }

    /// Whether `plan` is what serves already (or was refused already).
    pub fn is_unchanged(&self, plan: &ControllerPlan) -> bool {
        let state = self.state.lock().unwrap();
        let fingerprint = plan.fingerprint();
        state.applied.as_ref() == Some(&fingerprint)
            || state.refused.as_ref() == Some(&format!("{fingerprint:?}"))
    }

    /// Whether `plan` needs loading; refuses what cannot serve.
    pub fn prepare(&self, plan: ControllerPlan) -> Preparation {
        let state = self.state.lock().unwrap();
        let fingerprint = plan.fingerprint();
        if state.applied.as_ref() == Some(&fingerprint)
            || state.refused.as_ref() == Some(&format!("{fingerprint:?}"))
        {
            return Preparation::Unchanged;
        }
        if state.blocked.contains(&plan.serving.digest) {
            return Preparation::Refused(format!(
                "{} (sha256 {}) was rolled back automatically; ship a new build or restart rekon to retry it",
                plan.serving.path.display(),
                plan.serving.digest
            ));
        }
        Preparation::Load(Box::new(plan))
    }

    /// An already loaded version with this digest and the plan's limits.
    pub fn loaded(
        &self,
        plan: &ControllerPlan,
        digest: &ModuleDigest,
    ) -> Option<Arc<ModuleVersion>> {
        let state = self.state.lock().unwrap();
        let mut candidates = state
            .active
            .as_ref()
            .map(|a| &a.version)
            .into_iter()
            .chain(state.shadow.as_ref().map(|s| &s.version))
            .chain(state.fallback.as_ref());
        candidates
            .find(|v| v.digest() == digest && v.limits() == plan.limits)
            .cloned()
    }

    /// Whether serving `digest` would change the serving version (and so needs a canary replay).
    pub fn serves(&self, digest: &ModuleDigest) -> bool {
        let state = self.state.lock().unwrap();
        state
            .active
            .as_ref()
            .is_some_and(|a| a.version.digest() == digest)
    }

    /// Publishes a loaded plan.
    pub fn commit(
        &self,
        plan: &ControllerPlan,
        serving: Arc<ModuleVersion>,
        shadow: Option<Arc<ModuleVersion>>,
        fallback: Option<Arc<ModuleVersion>>,
        trip: TripFactory<'_>,
    ) -> ModuleEvent {
        let mut state = self.state.lock().unwrap();
        let replaced = state.active.as_ref().map(|a| a.version.clone());
        // Without a configured previous version, the one being replaced is the rollback target.
        let fallback =
            fallback.or_else(|| replaced.clone().filter(|r| r.digest() != serving.digest()));
        let shadow = shadow.map(|version| match &state.shadow {
            Some(kept) if kept.version.digest() == version.digest() => kept.clone(),
            _ => {
                let (observer, name) = (self.observer.clone(), self.name.clone());
                let tally = ShadowTally::new(self.shadow_differences_kept).with_hook(Box::new(
                    move |verdict| observer.shadow_verdict(&name, verdict),
                ));
                Shadow {
                    version,
                    tally: Arc::new(tally),
                }
            }
        });
        state.applied = Some(plan.fingerprint());
        state.refused = None;
        state.fallback = fallback;
        state.policy = plan.auto_rollback;
        state.promote = plan.auto_promote;
        state.promoted = None;
        state.promotion_stopped = None;
        state.rolled_back = None;
        state.mode = plan.mode;
        state.pinned = plan.pinned;
        self.publish(&mut state, serving.clone(), shadow, trip);
        ModuleEvent::Activated {
            controller: self.name.clone(),
            version: format!("{} ({})", serving.id(), serving.contract()),
            replaced: replaced
                .filter(|r| r.digest() != serving.digest())
                .map(|r| r.id().to_string()),
            shadow: state.shadow.as_ref().map(|s| s.version.id().to_string()),
        }
    }

    fn publish(
        &self,
        state: &mut State,
        serving: Arc<ModuleVersion>,
        shadow: Option<Shadow>,
        trip: TripFactory<'_>,
    ) {
        state.serial += 1;
        let guard = Arc::new(Guard::new(state.policy, trip(state.serial)));
        self.slot.publish(&serving, shadow.as_ref(), guard.clone());
        self.observer
            .activated(&self.name, &serving.info(), &serving.contract());
        state.active = Some(Active {
            version: serving,
            guard,
            since: Utc::now(),
        });
        state.shadow = shadow;
        state.swaps += 1;
    }

    /// Records a refusal; `plan` (when there was one) is not retried until it changes.
    pub fn refuse(&self, plan: Option<&ControllerPlan>, reason: String) -> Option<ModuleEvent> {
        let mut state = self.state.lock().unwrap();
        let key = plan
            .map(|p| format!("{:?}", p.fingerprint()))
            .unwrap_or_else(|| reason.clone());
        if state.refused.as_ref() == Some(&key) {
            return None;
        }
        state.refused = Some(key);
        state.rejections += 1;
        state.last_error = Some((reason.clone(), Utc::now()));
        Some(ModuleEvent::Rejected {
            controller: self.name.clone(),
            reason,
        })
    }

    /// Automatic rollback of publication `serial`, called from the decision
    /// that crossed the failure threshold.
    pub fn roll_back(
        &self,
        serial: u64,
        decisions: u64,
        failures: u64,
        trip: TripFactory<'_>,
    ) -> Option<ModuleEvent> {
        let mut state = self.state.lock().unwrap();
        if state.serial != serial {
            return None;
        }
        let failing = state.active.as_ref()?.version.clone();
        let Some(fallback) = state.fallback.take() else {
            let event = ModuleEvent::RollbackImpossible {
                controller: self.name.clone(),
                version: failing.id().to_string(),
                decisions,
                failures,
            };
            state.last_error = Some((event.note(), Utc::now()));
            return Some(event);
        };
        state.blocked.insert(failing.digest().clone());
        state.rollbacks += 1;
        let event = ModuleEvent::RolledBack {
            controller: self.name.clone(),
            from: failing.id().to_string(),
            to: fallback.id().to_string(),
            decisions,
            failures,
        };
        state.last_error = Some((event.note(), Utc::now()));
        state.rolled_back = Some((event.note(), failing.digest().clone()));
        let shadow = state.shadow.clone();
        self.publish(&mut state, fallback, shadow, trip);
        Some(event)
    }

    /// In mode shadow with `autoPromote`: once the shadow's evidence is in,
    /// publishes it as the active version (the old one becomes the rollback
    /// target); once it differed too often or failed, stops for good (until
    /// the plan changes).
    pub fn promote_due(&self, trip: TripFactory<'_>) -> Option<ModuleEvent> {
        let mut state = self.state.lock().unwrap();
        let policy = state.promote?;
        if state.mode != Mode::Shadow
            || state.promoted.is_some()
            || state.promotion_stopped.is_some()
        {
            return None;
        }
        let shadow = state.shadow.clone()?;
        let tally = &shadow.tally;
        let (agreed, differed, failed) = (tally.agreed(), tally.differed(), tally.failed());
        match policy.verdict(agreed, differed, failed) {
            PromotionVerdict::Waiting => None,
            PromotionVerdict::Stopped => {
                let key = tally
                    .differences()
                    .last()
                    .map(|d| format!("; last difference on key {} ({})", d.key, d.decision))
                    .unwrap_or_default();
                let event = ModuleEvent::PromotionStopped {
                    controller: self.name.clone(),
                    version: shadow.version.id().to_string(),
                    agreed,
                    differed,
                    failed,
                    max_differences: policy.max_differences,
                    detail: key,
                };
                state.promotion_stopped = Some(event.note());
                Some(event)
            }
            PromotionVerdict::Promote => {
                let replaced = state.active.as_ref()?.version.clone();
                state.fallback = Some(replaced.clone());
                state.mode = Mode::Active;
                state.promoted = Some(Promotion {
                    digest: shadow.version.digest().to_string(),
                    at: Utc::now(),
                    agreed,
                    differed,
                    failed,
                });
                self.publish(&mut state, shadow.version.clone(), None, trip);
                Some(ModuleEvent::Promoted {
                    controller: self.name.clone(),
                    version: shadow.version.id().to_string(),
                    replaced: replaced.id().to_string(),
                    agreed,
                })
            }
        }
    }

    /// The file the serving version was loaded from.
    pub fn serving_path(&self) -> Option<std::path::PathBuf> {
        let state = self.state.lock().unwrap();
        state
            .active
            .as_ref()
            .map(|a| a.version.path().to_path_buf())
    }

    pub fn status(&self) -> ControllerStatus {
        let state = self.state.lock().unwrap();
        let version = |v: &ModuleVersion| VersionStatus {
            name: v.id().name().to_string(),
            sha256: v.digest().to_string(),
            path: v.path().display().to_string(),
            contract: v.contract(),
        };
        let tally = state.shadow.as_ref().map(|s| &s.tally);
        ControllerStatus {
            active: state.active.as_ref().map(|a| version(&a.version)),
            active_since: state.active.as_ref().map(|a| a.since),
            shadow: state.shadow.as_ref().map(|s| version(&s.version)),
            previous: state.fallback.as_deref().map(version),
            mode: state.mode,
            pinned: state.pinned,
            swaps: state.swaps,
            rejections: state.rejections,
            rollbacks: state.rollbacks,
            decisions: state.active.as_ref().map_or(0, |a| a.guard.decisions()),
            failures: state.active.as_ref().map_or(0, |a| a.guard.failures()),
            shadow_agreed: tally.map_or(0, |t| t.agreed()),
            shadow_differed: tally.map_or(0, |t| t.differed()),
            shadow_failed: tally.map_or(0, |t| t.failed()),
            promoted_at: state.promoted.as_ref().map(|p| p.at),
            promotion: state.promoted.clone(),
            promotion_stopped: state.promotion_stopped.clone(),
            rolled_back: state.rolled_back.as_ref().map(|(note, _)| note.clone()),
            rolled_back_from: state.rolled_back.as_ref().map(|(_, d)| d.to_string()),
            shadow_dropped: tally.map_or(0, |t| t.dropped()),
            last_error: state.last_error.as_ref().map(|(e, _)| e.clone()),
            last_error_at: state.last_error.as_ref().map(|(_, at)| *at),
        }
    }

    /// Stops serving: nothing names this world any more (`reason` says why).
    /// Decisions fail from now on; the next plan starts afresh.
    pub fn withdraw(&self, reason: &str) -> Option<ModuleEvent> {
        let mut state = self.state.lock().unwrap();
        let active = state.active.take()?;
        let kept = (state.swaps, state.rejections, state.rollbacks, state.serial);
        *state = State {
            swaps: kept.0,
            rejections: kept.1,
            rollbacks: kept.2,
            serial: kept.3 + 1,
            blocked: std::mem::take(&mut state.blocked),
            ..State::default()
        };
        self.slot.withdraw(reason);
        self.observer.withdrawn(&self.name);
        Some(ModuleEvent::Withdrawn {
            controller: self.name.clone(),
            version: active.version.id().to_string(),
            reason: reason.to_string(),
        })
    }

    /// The digests of every version that serves or may serve (active, shadow,
    /// rollback target): what the precompiled cache keeps in memory.
    pub fn kept_digests(&self) -> Vec<ModuleDigest> {
        let state = self.state.lock().unwrap();
        let active = state.active.as_ref().map(|a| a.version.digest().clone());
        let shadow = state.shadow.as_ref().map(|s| s.version.digest().clone());
        let fallback = state.fallback.as_ref().map(|f| f.digest().clone());
        [active, shadow, fallback].into_iter().flatten().collect()
    }

    /// The current shadow's tally, for `rekon diff` and tests.
    pub fn shadow_tally(&self) -> Option<Arc<ShadowTally>> {
        self.state
            .lock()
            .unwrap()
            .shadow
            .as_ref()
            .map(|s| s.tally.clone())
    }
}
