//! The objects as last seen and what was done with each: one object serves
//! each world or controller module (the oldest naming it; the others are
//! refused as duplicates), each new generation is fetched and applied in a
//! task of its own (a slow registry or compile delays no other object), and
//! when an object goes (or names another world) the world passes to the next
//! oldest object naming it, or stops deciding when none does. A controller
//! module's object that is deleted, or whose new version drops a finalizer,
//! goes through its removal policy ([`super::removal`]).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::FutureExt;
use kube::ResourceExt;
use kube::api::DynamicObject;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::config::{KindPin, Mode, ScopePin};
use crate::controller_modules::{Applied, Offered};
use crate::manager::Modules;
use crate::object::decode::{decode, status_of};
use crate::object::fetch::Fetcher;
use crate::object::plan::{
    Target, on_removal, plan, plan_controller, target_of, validate, was_promoted,
};
use crate::object::removal::{Job, Progress, Removals};
use crate::object::resource::{DecisionModule, DecisionModuleStatus, OnRemoval};
use crate::object::status::{Outcome, compute};
use crate::object::writer::{StatusClient, StatusWriter};
use crate::refusal::{Refusal, RefusalReason};

/// One object as last seen: as stored, and parsed.
struct Seen {
    raw: DynamicObject,
    parsed: Result<DecisionModule, Refusal>,
}

impl Seen {
    fn new(raw: DynamicObject) -> Self {
        let parsed = decode(&raw);
        Self { raw, parsed }
    }

    fn deleting(&self) -> bool {
        self.raw.metadata.deletion_timestamp.is_some()
    }

    /// What a fetch of this object depends on: a new one makes the last fetch stale.
    fn version(&self) -> Version {
        Version {
            uid: self.raw.uid(),
            generation: self.raw.metadata.generation,
            rolled_back: self
                .parsed
                .as_ref()
                .ok()
                .and_then(|o| o.status.as_ref()?.rolled_back.as_ref())
                .map(|r| r.digest.clone()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Version {
    uid: Option<String>,
    generation: Option<i64>,
    /// The rollback its status records: another replica's rollback is honoured here.
    rolled_back: Option<String>,
}

/// What was done with one object.
struct Tracked {
    version: Version,
    outcome: Outcome,
    /// When a transient refusal may be retried.
    retry_at: Option<Instant>,
}

/// A fetch and apply in flight.
struct Work {
    version: Version,
    task: JoinHandle<()>,
}

impl Drop for Work {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What a finished [`Work`] reports back to the loop.
pub struct Finished {
    name: String,
    version: Version,
    target: Target,
    outcome: Outcome,
    /// What a controller module's plan served.
    applied: Option<Applied>,
}

pub struct Objects {
    modules: Modules,
    fetcher: Fetcher,
    writer: StatusWriter,
    retry: Duration,
    seen: BTreeMap<String, Seen>,
    tracked: BTreeMap<String, Tracked>,
    working: BTreeMap<String, Work>,
    /// The object each world or controller is claimed for (the guests
    /// directory stays off it), by [`Target::key`].
    claimed: BTreeMap<String, (Target, String)>,
    /// The object whose plan each world's or controller's module comes from.
    serving: BTreeMap<String, String>,
    done: mpsc::UnboundedSender<Finished>,
    /// Releases of controller modules' finalizers, by object.
    removals: Removals,
    releases: BTreeMap<String, (Job, Option<Progress>)>,
}

impl Objects {
    pub fn new(
        modules: Modules,
        fetcher: Fetcher,
        client: StatusClient,
        retry: Duration,
    ) -> (
        Self,
        mpsc::UnboundedReceiver<Finished>,
        mpsc::UnboundedReceiver<Progress>,
    ) {
        let (done, finished) = mpsc::unbounded_channel();
        let writer = StatusWriter::start(client.clone());
        let (removals, progress) = Removals::new(client, modules.controller_set(), retry);
        let objects = Self {
            modules,
            fetcher,
            writer,
            retry,
            seen: BTreeMap::new(),
            tracked: BTreeMap::new(),
            working: BTreeMap::new(),
            claimed: BTreeMap::new(),
            serving: BTreeMap::new(),
            done,
            removals,
            releases: BTreeMap::new(),
        };
        (objects, finished, progress)
    }

    /// How a release goes; the last report of a finished one is kept until
    /// the status shows it.
    pub fn progress(&mut self, progress: Progress) {
        if let Some((job, last)) = self.releases.get_mut(&progress.object)
            && job.uid == progress.uid
        {
            *last = Some(progress);
        }
    }

    pub fn seen(&mut self, raw: DynamicObject) {
        self.seen.insert(raw.name_any(), Seen::new(raw));
    }

    pub fn gone(&mut self, name: &str) {
        self.seen.remove(name);
    }

    pub fn relisted(&mut self, objects: BTreeMap<String, DynamicObject>) {
        self.seen = objects
            .into_iter()
            .map(|(name, raw)| (name, Seen::new(raw)))
            .collect();
    }

    /// A fetch and apply finished; a stale one (the object changed since) is dropped.
    pub fn finished(&mut self, finished: Finished) {
        let Finished {
            name,
            version,
            target,
            outcome,
            applied,
        } = finished;
        if self.working.get(&name).is_none_or(|w| w.version != version) {
            return;
        }
        self.working.remove(&name);
        let key = target.key().to_string();
        match &outcome {
            Outcome::Applied { .. } => {
                self.serving.insert(key, name.clone());
                if let Some(applied) = applied {
                    self.narrowed(&name, &target, applied);
                }
            }
            Outcome::Refused(refusal) => {
                // The module serving came from an object that no longer names the
                // world: it must not go on deciding in place of this refused one.
                if self.serving.get(&key).is_some_and(|s| *s != name) {
                    let gone = self.serving.remove(&key).unwrap_or_default();
                    let reason = format!(
                        "DecisionModule {gone} no longer names {key} and DecisionModule {name}, \
                         which does, was refused: {}",
                        refusal.message
                    );
                    match &target {
                        Target::World(world) => self.modules.withdraw(*world, &reason),
                        Target::Controller(controller) => {
                            self.modules.withdraw_controller(controller, &reason);
                        }
                    }
                }
            }
            Outcome::Pulling | Outcome::Releasing(_) => {}
        }
        let retry_at = match &outcome {
            Outcome::Refused(r) if r.reason.is_transient() => Some(Instant::now() + self.retry),
            _ => None,
        };
        self.track(&name, version, outcome, retry_at);
    }

    pub async fn reconcile(&mut self) {
        let owners = owners(&self.seen);
        let names: Vec<String> = self.seen.keys().cloned().collect();
        for name in &names {
            self.reconcile_one(name, &owners);
        }
        let seen = &self.seen;
        self.tracked.retain(|name, _| seen.contains_key(name));
        self.working.retain(|name, _| seen.contains_key(name));
        self.releases.retain(|name, (job, _)| {
            seen.get(name)
                .is_some_and(|s| s.raw.uid().as_deref() == Some(job.uid.as_str()))
        });
        self.removals.retain(|name| seen.contains_key(name));
        let released: Vec<(String, Target, String)> = self
            .claimed
            .iter()
            .filter(|(key, _)| !owners.contains_key(*key))
            .map(|(key, (target, owner))| (key.clone(), target.clone(), owner.clone()))
            .collect();
        for (key, target, owner) in released {
            self.claimed.remove(&key);
            self.serving.remove(&key);
            let reason = format!(
                "no DecisionModule names {target} any more (DecisionModule {owner} was deleted or names another)"
            );
            tracing::warn!(target = %key, object = %owner, "{reason}");
            match target {
                Target::World(world) => self.modules.release(world, &reason).boxed().await,
                Target::Controller(name) => {
                    self.modules
                        .release_controller(&name, &reason)
                        .boxed()
                        .await
                }
            }
        }
        for name in &names {
            self.write_status(name);
        }
    }

    fn reconcile_one(&mut self, name: &str, owners: &BTreeMap<String, String>) {
        let seen = &self.seen[name];
        let version = seen.version();
        let object = match &seen.parsed {
            Ok(object) => object.clone(),
            Err(refusal) => {
                let outcome = Outcome::Refused(refusal.clone());
                if self.tracked.get(name).is_none_or(|t| t.outcome != outcome) {
                    tracing::warn!(object = %name, reason = %refusal.reason, "{refusal}");
                }
                self.working.remove(name);
                self.track(name, version, outcome, None);
                return;
            }
        };
        let target = target_of(&object.spec).ok();
        if let Some(Target::Controller(controller)) = &target {
            if seen.deleting() {
                let owner = owners.get(controller.as_str()).is_some_and(|o| o == name);
                self.remove(name, controller, &object, owner);
                return;
            }
            let raw = seen.raw.clone();
            self.removals.hold(&raw);
        }
        let duplicate_of = target
            .as_ref()
            .and_then(|t| owners.get(t.key()))
            .filter(|owner| *owner != name);
        if let Some(owner) = duplicate_of {
            let refusal = Refusal::new(
                RefusalReason::DuplicateWorld,
                format!(
                    "DecisionModule {name}: world {} is already served by DecisionModule {owner}; \
                     one object per world, delete one of them",
                    object.spec.world
                ),
            );
            let outcome = Outcome::Refused(refusal);
            if self.tracked.get(name).is_none_or(|t| t.outcome != outcome) {
                tracing::warn!(object = %name, "{outcome:?}");
            }
            self.working.remove(name);
            self.track(name, version, outcome, None);
            return;
        }
        self.resume_release(name, &object);
        if self.working.get(name).is_some_and(|w| w.version == version) {
            return;
        }
        let tracked = self.tracked.get(name);
        // A duplicate that became the owner is planned at once.
        let current = tracked.is_some_and(|t| {
            t.version == version
                && !matches!(&t.outcome, Outcome::Refused(r) if r.reason == RefusalReason::DuplicateWorld)
        });
        let retry_due = tracked
            .and_then(|t| t.retry_at)
            .is_some_and(|at| Instant::now() >= at);
        if current && !retry_due {
            return;
        }
        let config = self.modules.engine().config();
        let (defaults, max_mib) = (config.default_limits, config.max_memory_bytes >> 20);
        let target = match validate(&object, max_mib) {
            Ok(target) => target,
            Err(refusal) => {
                tracing::warn!(object = %name, reason = %refusal.reason, "DecisionModule {name} refused: {refusal}");
                self.working.remove(name);
                self.track(name, version, Outcome::Refused(refusal), None);
                return;
            }
        };
        let key = target.key().to_string();
        if self.claimed.get(&key).is_none_or(|(_, o)| o != name) {
            self.claimed
                .insert(key.clone(), (target.clone(), name.to_string()));
            match &target {
                Target::World(world) => self.modules.claim(*world, name),
                Target::Controller(controller) => self.modules.claim_controller(controller, name),
            }
        }
        self.track(name, version.clone(), Outcome::Pulling, None);
        let task = tokio::spawn({
            let (modules, fetcher, done) = (
                self.modules.clone(),
                self.fetcher.clone(),
                self.done.clone(),
            );
            let (name, version) = (name.to_string(), version.clone());
            async move {
                let (outcome, applied) = match &target {
                    Target::World(world) => (
                        apply_world(&modules, &fetcher, &object, *world, defaults).await,
                        None,
                    ),
                    Target::Controller(controller) => {
                        apply_controller(&modules, &fetcher, &object, &name, controller, defaults)
                            .await
                    }
                };
                let _ = done.send(Finished {
                    name,
                    version,
                    target,
                    outcome,
                    applied,
                });
            }
        });
        self.working
            .insert(name.to_string(), Work { version, task });
    }

    /// A controller module's object is deleted: its controller stops (when
    /// this object served it), and its removal policy runs before rekon's
    /// finalizer lets the object go.
    fn remove(&mut self, name: &str, controller: &str, object: &DecisionModule, owner: bool) {
        let seen = &self.seen[name];
        let uid = seen.raw.uid().unwrap_or_default();
        let version = seen.version();
        if self
            .releases
            .get(name)
            .is_none_or(|(job, _)| job.uid != uid || !job.deleting)
        {
            self.working.remove(name);
            let withdrawn = owner
                .then(|| {
                    self.modules.withdraw_controller(
                        controller,
                        &format!("DecisionModule {name} is being deleted"),
                    )
                })
                .flatten();
            let status = object.status.clone().unwrap_or_default();
            let mut names = status.releasing.clone();
            let mut primary = status.primary.as_ref().map(KindPin::to_kind);
            if let Some(declared) = &status.scope {
                names.extend(declared.finalizers.iter().cloned());
            }
            if let Some(withdrawn) = &withdrawn {
                names.extend(withdrawn.description.scope.finalizers.iter().cloned());
                primary = Some(withdrawn.description.primary.clone());
            }
            names.sort();
            names.dedup();
            let keep = !owner || on_removal(&object.spec) == OnRemoval::Keep;
            let job = Job {
                object: name.to_string(),
                uid,
                controller: controller.to_string(),
                stopped: withdrawn.as_ref().map(|w| w.instance),
                names: if keep || primary.is_none() {
                    Vec::new()
                } else {
                    names
                },
                primary: primary.unwrap_or_default(),
                deleting: true,
            };
            tracing::info!(object = %name, controller, policy = ?on_removal(&object.spec), names = ?job.names,
                "DecisionModule deleted: the controller module stops");
            self.releases.insert(name.to_string(), (job, None));
        }
        let (job, progress) = &self.releases[name];
        self.removals.start(job.clone());
        let message = release_message(job, progress.as_ref());
        self.track(name, version, Outcome::Releasing(message), None);
    }

    /// A new description of controller `target` dropped finalizers its
    /// predecessor declared: with `onRemoval: Release` they are released from
    /// every primary object.
    fn narrowed(&mut self, name: &str, target: &Target, applied: Applied) {
        let (
            Target::Controller(controller),
            Offered::Started {
                replaced: Some(old),
            },
        ) = (target, applied.offered)
        else {
            return;
        };
        let Some(seen) = self.seen.get(name) else {
            return;
        };
        let Ok(object) = &seen.parsed else {
            return;
        };
        let kept = &applied.description.scope.finalizers;
        let dropped: Vec<String> = old
            .description
            .scope
            .finalizers
            .iter()
            .filter(|f| !kept.contains(f))
            .cloned()
            .collect();
        if dropped.is_empty() || on_removal(&object.spec) == OnRemoval::Keep {
            return;
        }
        tracing::info!(object = %name, controller = %controller, dropped = ?dropped,
            "the new version no longer declares these finalizers; releasing them");
        let job = Job {
            object: name.to_string(),
            uid: seen.raw.uid().unwrap_or_default(),
            controller: controller.clone(),
            stopped: Some(old.instance),
            primary: old.description.primary.clone(),
            names: dropped,
            deleting: false,
        };
        self.removals.start(job.clone());
        self.releases.insert(name.to_string(), (job, None));
    }

    /// A release the status records (`status.releasing`) that no task runs
    /// (rekon restarted meanwhile) starts again.
    fn resume_release(&mut self, name: &str, object: &DecisionModule) {
        let Some(status) = &object.status else {
            return;
        };
        if status.releasing.is_empty() || self.releases.contains_key(name) {
            return;
        }
        let (Some(primary), Ok(Target::Controller(controller))) =
            (&status.primary, target_of(&object.spec))
        else {
            return;
        };
        let job = Job {
            object: name.to_string(),
            uid: object.uid().unwrap_or_default(),
            controller,
            stopped: None,
            primary: primary.to_kind(),
            names: status.releasing.clone(),
            deleting: false,
        };
        self.removals.start(job.clone());
        self.releases.insert(name.to_string(), (job, None));
    }

    fn track(&mut self, name: &str, version: Version, outcome: Outcome, retry_at: Option<Instant>) {
        self.tracked.insert(
            name.to_string(),
            Tracked {
                version,
                outcome,
                retry_at,
            },
        );
    }

    /// Submits `name`'s status if it differs from what the object shows. Only
    /// the object whose plan serves its world names what the world serves.
    fn write_status(&self, name: &str) {
        let (Some(seen), Some(tracked)) = (self.seen.get(name), self.tracked.get(name)) else {
            return;
        };
        let spec = seen.parsed.as_ref().ok().map(|o| &o.spec);
        let target = spec
            .and_then(|spec| target_of(spec).ok())
            .filter(|target| self.serving.get(target.key()).is_some_and(|s| s == name));
        let (controller_status, declared) = match &target {
            Some(Target::World(world)) => {
                (self.modules.status().controllers.remove(world.name()), None)
            }
            Some(Target::Controller(controller)) => {
                match self.modules.serving_controller(controller) {
                    Some(serving) => (Some(serving.status), Some(serving.description)),
                    None => (None, None),
                }
            }
            None => (None, None),
        };
        let previous = status_of(&seen.raw);
        let mut status = compute(
            tracked.version.generation,
            &tracked.outcome,
            spec.is_some_and(|s| s.auto_promote.is_some()),
            controller_status.as_ref(),
            previous.as_ref(),
        );
        self.controller_fields(name, declared, previous.as_ref(), &mut status);
        if previous.as_ref() != Some(&status) {
            self.writer.submit(&seen.raw, &status);
        }
    }

    /// A controller module's declared scope (of the version serving, else as
    /// recorded) and its release in progress.
    fn controller_fields(
        &self,
        name: &str,
        declared: Option<rekon_contract::controller::Description>,
        previous: Option<&DecisionModuleStatus>,
        status: &mut DecisionModuleStatus,
    ) {
        match declared {
            Some(description) => {
                status.primary = Some(KindPin::of(&description.primary));
                status.scope = Some(ScopePin::of(&description.scope));
            }
            None => {
                status.primary = previous.and_then(|p| p.primary.clone());
                status.scope = previous.and_then(|p| p.scope.clone());
            }
        }
        if let Some((job, progress)) = self.releases.get(name)
            && progress.as_ref().is_none_or(|p| !p.done)
        {
            status.releasing = job.names.clone();
            status.remaining = progress.as_ref().and_then(|p| p.remaining);
        }
    }
}

/// Fetches and applies the plan of a built-in world's object.
async fn apply_world(
    modules: &Modules,
    fetcher: &Fetcher,
    object: &DecisionModule,
    world: rekon_runtime::World,
    defaults: rekon_runtime::Limits,
) -> Outcome {
    match plan(object, world, fetcher, defaults).boxed().await {
        Err(refusal) => {
            modules.refuse_world(world, &refusal);
            Outcome::Refused(refusal)
        }
        Ok(planned) => match modules.apply_plan(planned.plan).boxed().await {
            Ok(_) => Outcome::Applied {
                promoted: object.spec.mode == Mode::Shadow && was_promoted(object),
                rolled_back: planned.rolled_back,
            },
            Err(refusal) => Outcome::Refused(refusal),
        },
    }
}

/// Fetches and applies the modules of a controller module's object.
async fn apply_controller(
    modules: &Modules,
    fetcher: &Fetcher,
    object: &DecisionModule,
    name: &str,
    controller: &str,
    defaults: rekon_runtime::Limits,
) -> (Outcome, Option<Applied>) {
    let applied = match plan_controller(object, controller, fetcher, defaults)
        .boxed()
        .await
    {
        Ok((plan, rolled_back)) => modules
            .apply_controller(name, plan)
            .boxed()
            .await
            .map(|applied| (applied, rolled_back)),
        Err(refusal) => Err(refusal),
    };
    match applied {
        Ok((applied, rolled_back)) => (
            Outcome::Applied {
                promoted: object.spec.mode == Mode::Shadow && was_promoted(object),
                rolled_back,
            },
            Some(applied),
        ),
        Err(refusal) => {
            tracing::warn!(object = %name, controller, reason = %refusal.reason, "DecisionModule {name} refused: {refusal}");
            (Outcome::Refused(refusal), None)
        }
    }
}

/// What a deleted controller module's object says while its release runs.
fn release_message(job: &Job, progress: Option<&Progress>) -> String {
    if job.names.is_empty() {
        return format!(
            "the controller module {} stopped; its finalizers stay (onRemoval: Keep, or nothing to release)",
            job.controller
        );
    }
    let remaining = match progress.and_then(|p| p.remaining) {
        Some(n) => format!("{n} {} objects still carry them", job.primary.kind),
        None => "counting the objects that carry them".to_string(),
    };
    let error = progress
        .and_then(|p| p.error.as_ref())
        .map(|e| format!("; last attempt: {e}"))
        .unwrap_or_default();
    format!(
        "the controller module {} stopped; releasing {} from every {}: {remaining}{error}",
        job.controller,
        job.names.join(", "),
        job.primary
    )
}

/// The object serving each world or controller: the oldest naming it (then by name).
fn owners(objects: &BTreeMap<String, Seen>) -> BTreeMap<String, String> {
    let mut owners: BTreeMap<String, &DecisionModule> = BTreeMap::new();
    for object in objects.values().filter_map(|s| s.parsed.as_ref().ok()) {
        let Ok(target) = target_of(&object.spec) else {
            continue;
        };
        let key = |o: &DecisionModule| (o.creation_timestamp().map(|t| t.0), o.name_any());
        match owners.get(target.key()) {
            Some(owner) if key(owner) <= key(object) => {}
            _ => {
                owners.insert(target.key().to_string(), object);
            }
        }
    }
    owners
        .into_iter()
        .map(|(target, o)| (target, o.name_any()))
        .collect()
}
