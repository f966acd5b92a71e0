//! Serving worlds from `DecisionModule` objects: watch them, pick one object
//! per world (the oldest; the others are refused as duplicates), fetch and
//! apply each new generation through [`Modules`], and keep every object's
//! status current. Every replica fetches, checks and precompiles; only a
//! replica that `may_write` (the leader) writes statuses.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, ResourceExt};
use rekon_runtime::World;
use tokio::task::JoinHandle;

use crate::manager::Modules;
use crate::object::fetch::Fetcher;
use crate::object::plan::{plan, validate, was_promoted, world_of};
use crate::object::resource::DecisionModule;
use crate::object::status::{Outcome, compute};
use crate::object::writer::StatusWriter;
use crate::refusal::{Refusal, RefusalReason};

/// The API group and version that must be served (discovery) for objects to be watched.
pub const API: &str = "rekon.dev/v1alpha1";

pub struct ObjectOptions {
    /// Whether this replica writes statuses now (the leader, or no election).
    pub may_write: Arc<dyn Fn() -> bool + Send + Sync>,
    /// How often statuses are recomputed (shadow counts change without events).
    pub status_interval: Duration,
    /// Wait before fetching again after a transient failure (registry unreachable...).
    pub retry: Duration,
}

impl Default for ObjectOptions {
    fn default() -> Self {
        Self {
            may_write: Arc::new(|| true),
            status_interval: Duration::from_secs(1),
            retry: Duration::from_secs(10),
        }
    }
}

/// Serving stops when this is dropped.
pub struct ServingObjects {
    task: JoinHandle<()>,
}

impl Drop for ServingObjects {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts serving worlds from the `DecisionModule` objects of `client`'s cluster.
pub fn serve(
    modules: Modules,
    client: Client,
    fetcher: Fetcher,
    options: ObjectOptions,
) -> ServingObjects {
    let api: Api<DecisionModule> = Api::all(client);
    let mut objects = Objects {
        writer: StatusWriter::start(api.clone()),
        modules,
        fetcher,
        options,
        seen: BTreeMap::new(),
        tracked: BTreeMap::new(),
        claimed: BTreeSet::new(),
    };
    let task = tokio::spawn(async move {
        let mut events = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut listing: Option<BTreeMap<String, DecisionModule>> = None;
        let mut tick = tokio::time::interval(objects.options.status_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                event = events.next() => match event {
                    None => return,
                    Some(Ok(Event::Apply(o))) => { objects.seen.insert(o.name_any(), o); }
                    Some(Ok(Event::Delete(o))) => { objects.seen.remove(&o.name_any()); }
                    Some(Ok(Event::Init)) => listing = Some(BTreeMap::new()),
                    Some(Ok(Event::InitApply(o))) => {
                        listing.get_or_insert_with(BTreeMap::new).insert(o.name_any(), o);
                    }
                    Some(Ok(Event::InitDone)) => {
                        objects.seen = listing.take().unwrap_or_default();
                    }
                    Some(Err(err)) => {
                        tracing::warn!(error = %err, "watching DecisionModules; retrying");
                        continue;
                    }
                },
                _ = tick.tick() => {}
            }
            if listing.is_none() {
                objects.reconcile().boxed().await;
            }
        }
    });
    ServingObjects { task }
}

/// What was done with one object.
struct Tracked {
    uid: Option<String>,
    generation: Option<i64>,
    outcome: Outcome,
    /// When a transient refusal may be retried.
    retry_at: Option<Instant>,
}

struct Objects {
    modules: Modules,
    fetcher: Fetcher,
    options: ObjectOptions,
    writer: StatusWriter,
    /// The objects as last seen, by name.
    seen: BTreeMap<String, DecisionModule>,
    tracked: BTreeMap<String, Tracked>,
    /// Worlds served from an object.
    claimed: BTreeSet<&'static str>,
}

impl Objects {
    async fn reconcile(&mut self) {
        let owners = owners(&self.seen);
        let names: Vec<String> = self.seen.keys().cloned().collect();
        for name in &names {
            let object = self.seen[name].clone();
            self.reconcile_one(&object, &owners).boxed().await;
        }
        self.tracked.retain(|name, _| self.seen.contains_key(name));
        let released: Vec<&'static str> = self
            .claimed
            .iter()
            .filter(|w| !owners.contains_key(**w))
            .copied()
            .collect();
        for name in released {
            self.claimed.remove(name);
            let world = World::named(name).expect("claimed worlds are known");
            self.modules.release(world);
            self.modules.reload().boxed().await;
        }
        if (self.options.may_write)() {
            for name in &names {
                self.write_status(&self.seen[name]);
            }
        }
    }

    async fn reconcile_one(
        &mut self,
        object: &DecisionModule,
        owners: &BTreeMap<&'static str, String>,
    ) {
        let name = object.name_any();
        let (uid, generation) = (object.uid(), object.metadata.generation);
        let tracked = self.tracked.get(&name);
        let current = tracked.is_some_and(|t| t.uid == uid && t.generation == generation);
        let retry_due = tracked
            .and_then(|t| t.retry_at)
            .is_some_and(|at| Instant::now() >= at);
        let duplicate_of = world_of(&object.spec)
            .ok()
            .and_then(|w| owners.get(w.name()))
            .filter(|owner| **owner != name);
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
            if tracked.is_none_or(|t| t.outcome != outcome) {
                tracing::warn!(object = %name, "{outcome:?}");
            }
            self.track(&name, uid, generation, outcome, None);
            return;
        }
        if current && !retry_due {
            return;
        }
        let config = self.modules.engine().config();
        let (defaults, max_mib) = (config.default_limits, config.max_memory_bytes >> 20);
        let world = match validate(object, max_mib) {
            Ok(world) => world,
            Err(refusal) => {
                tracing::warn!(object = %name, reason = %refusal.reason, "DecisionModule {name} refused: {refusal}");
                self.track(&name, uid, generation, Outcome::Refused(refusal), None);
                return;
            }
        };
        if self.claimed.insert(world.name()) {
            self.modules.claim(world, &name);
        }
        self.track(&name, uid.clone(), generation, Outcome::Pulling, None);
        if (self.options.may_write)() {
            self.write_status(object);
        }
        let outcome = match plan(object, world, &self.fetcher, defaults).boxed().await {
            Err(refusal) => {
                self.modules.refuse_world(world, &refusal);
                Outcome::Refused(refusal)
            }
            Ok(plan) => match self.modules.apply_plan(plan).boxed().await {
                Ok(_) => Outcome::Applied {
                    promoted: object.spec.mode == crate::config::Mode::Shadow
                        && was_promoted(object),
                },
                Err(refusal) => Outcome::Refused(refusal),
            },
        };
        let retry_at = match &outcome {
            Outcome::Refused(r) if r.reason.is_transient() => {
                Some(Instant::now() + self.options.retry)
            }
            _ => None,
        };
        self.track(&name, uid, generation, outcome, retry_at);
    }

    fn track(
        &mut self,
        name: &str,
        uid: Option<String>,
        generation: Option<i64>,
        outcome: Outcome,
        retry_at: Option<Instant>,
    ) {
        self.tracked.insert(
            name.to_string(),
            Tracked {
                uid,
                generation,
                outcome,
                retry_at,
            },
        );
    }

    /// Submits `object`'s status if it differs from what it shows.
    fn write_status(&self, object: &DecisionModule) {
        let name = object.name_any();
        let Some(tracked) = self.tracked.get(&name) else {
            return;
        };
        let serves_world = !matches!(
            &tracked.outcome,
            Outcome::Refused(r) if r.reason == RefusalReason::DuplicateWorld
        );
        let controller_status = world_of(&object.spec)
            .ok()
            .filter(|_| serves_world)
            .and_then(|world| self.modules.status().controllers.remove(world.name()));
        let status = compute(
            tracked.generation,
            &tracked.outcome,
            object.spec.auto_promote.is_some(),
            controller_status.as_ref(),
            object.status.as_ref(),
        );
        if object.status.as_ref() != Some(&status) {
            self.writer.submit(object, status);
        }
    }
}

/// The object serving each world: the oldest naming it (then by name).
fn owners(objects: &BTreeMap<String, DecisionModule>) -> BTreeMap<&'static str, String> {
    let mut owners: BTreeMap<&'static str, &DecisionModule> = BTreeMap::new();
    for object in objects.values() {
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
