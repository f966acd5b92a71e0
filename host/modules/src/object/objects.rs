//! The objects as last seen and what was done with each: one object serves
//! each world (the oldest naming it; the others are refused as duplicates),
//! each new generation is fetched and applied in a task of its own (a slow
//! registry or compile delays no other object), and when an object goes (or
//! names another world) the world passes to the next oldest object naming it,
//! or stops deciding when none does.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::FutureExt;
use kube::ResourceExt;
use kube::api::DynamicObject;
use rekon_runtime::World;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::config::Mode;
use crate::manager::Modules;
use crate::object::decode::{decode, status_of};
use crate::object::fetch::Fetcher;
use crate::object::plan::{plan, validate, was_promoted, world_of};
use crate::object::resource::DecisionModule;
use crate::object::status::{Outcome, compute};
use crate::object::writer::StatusWriter;
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
    world: World,
    outcome: Outcome,
}

pub struct Objects {
    modules: Modules,
    fetcher: Fetcher,
    writer: StatusWriter,
    retry: Duration,
    seen: BTreeMap<String, Seen>,
    tracked: BTreeMap<String, Tracked>,
    working: BTreeMap<String, Work>,
    /// The object each world is claimed for (the guests directory stays off it).
    claimed: BTreeMap<&'static str, String>,
    /// The object whose plan each world's module comes from.
    serving: BTreeMap<&'static str, String>,
    done: mpsc::UnboundedSender<Finished>,
}

impl Objects {
    pub fn new(
        modules: Modules,
        fetcher: Fetcher,
        writer: StatusWriter,
        retry: Duration,
    ) -> (Self, mpsc::UnboundedReceiver<Finished>) {
        let (done, finished) = mpsc::unbounded_channel();
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
        };
        (objects, finished)
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
            world,
            outcome,
        } = finished;
        if self.working.get(&name).is_none_or(|w| w.version != version) {
            return;
        }
        self.working.remove(&name);
        match &outcome {
            Outcome::Applied { .. } => {
                self.serving.insert(world.name(), name.clone());
            }
            Outcome::Refused(refusal) => {
                // The module serving came from an object that no longer names the
                // world: it must not go on deciding in place of this refused one.
                if self.serving.get(world.name()).is_some_and(|s| *s != name) {
                    let gone = self.serving.remove(world.name()).unwrap_or_default();
                    let reason = format!(
                        "DecisionModule {gone} no longer names world {world} and DecisionModule {name}, \
                         which does, was refused: {}",
                        refusal.message
                    );
                    self.modules.withdraw(world, &reason);
                }
            }
            Outcome::Pulling => {}
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
        self.tracked.retain(|name, _| self.seen.contains_key(name));
        self.working.retain(|name, _| self.seen.contains_key(name));
        let released: Vec<(&'static str, String)> = self
            .claimed
            .iter()
            .filter(|(world, _)| !owners.contains_key(**world))
            .map(|(world, owner)| (*world, owner.clone()))
            .collect();
        for (name, owner) in released {
            self.claimed.remove(name);
            self.serving.remove(name);
            let world = World::named(name).expect("claimed worlds are known");
            let reason = format!(
                "no DecisionModule names world {world} any more (DecisionModule {owner} was deleted or names another world)"
            );
            tracing::warn!(%world, object = %owner, "{reason}");
            self.modules.release(world, &reason).boxed().await;
        }
        for name in &names {
            self.write_status(name);
        }
    }

    fn reconcile_one(&mut self, name: &str, owners: &BTreeMap<&'static str, String>) {
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
        let world = world_of(&object.spec).ok();
        let duplicate_of = world
            .and_then(|w| owners.get(w.name()))
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
        let world = match validate(&object, max_mib) {
            Ok(world) => world,
            Err(refusal) => {
                tracing::warn!(object = %name, reason = %refusal.reason, "DecisionModule {name} refused: {refusal}");
                self.working.remove(name);
                self.track(name, version, Outcome::Refused(refusal), None);
                return;
            }
        };
        if self.claimed.get(world.name()).is_none_or(|o| o != name) {
            self.claimed.insert(world.name(), name.to_string());
            self.modules.claim(world, name);
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
                let outcome = match plan(&object, world, &fetcher, defaults).boxed().await {
                    Err(refusal) => {
                        modules.refuse_world(world, &refusal);
                        Outcome::Refused(refusal)
                    }
                    Ok(planned) => match modules.apply_plan(planned.plan).boxed().await {
                        Ok(_) => Outcome::Applied {
                            promoted: object.spec.mode == Mode::Shadow && was_promoted(&object),
                            rolled_back: planned.rolled_back,
                        },
                        Err(refusal) => Outcome::Refused(refusal),
                    },
                };
                let _ = done.send(Finished {
                    name,
                    version,
                    world,
                    outcome,
                });
            }
        });
        self.working
            .insert(name.to_string(), Work { version, task });
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
        let controller_status = spec
            .and_then(|spec| world_of(spec).ok())
            .filter(|world| self.serving.get(world.name()).is_some_and(|s| s == name))
            .and_then(|world| self.modules.status().controllers.remove(world.name()));
        let previous = status_of(&seen.raw);
        let status = compute(
            tracked.version.generation,
            &tracked.outcome,
            spec.is_some_and(|s| s.auto_promote.is_some()),
            controller_status.as_ref(),
            previous.as_ref(),
        );
        if previous.as_ref() != Some(&status) {
            self.writer.submit(&seen.raw, &status);
        }
    }
}

/// The object serving each world: the oldest naming it (then by name).
fn owners(objects: &BTreeMap<String, Seen>) -> BTreeMap<&'static str, String> {
    let mut owners: BTreeMap<&'static str, &DecisionModule> = BTreeMap::new();
    for object in objects.values().filter_map(|s| s.parsed.as_ref().ok()) {
        let Ok(world) = world_of(&object.spec) else {
            continue;
        };
        let key = |o: &DecisionModule| (o.creation_timestamp().map(|t| t.0), o.name_any());
        match owners.get(world.name()) {
            Some(owner) if key(owner) <= key(object) => {}
            _ => {
                owners.insert(world.name(), object);
            }
        }
    }
    owners
        .into_iter()
        .map(|(world, o)| (world, o.name_any()))
        .collect()
}
