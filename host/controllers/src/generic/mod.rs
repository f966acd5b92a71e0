//! One controller for every controller module (`rekon:reconcile/controller`):
//! the module's description says what to watch, how events map to keys, what a
//! decision sees and what it may write; this controller does the rest on the
//! host's runtime (queue, workers, decision pool, fence, journal, writer).
//!
//! - [`describe`]: the description checked once at load ([`Checked`]).
//! - [`paths`]: field paths and the projection of objects.
//! - [`relate`]: a watch's mapping, both ways (events → keys, primary → objects).
//! - [`validate`]: a decision's actions against the scope → the [`validate::Plan`].
//! - [`pin`]: a description against the scope the operator pinned.
//! - [`rbac`]: the ClusterRole a module's scope needs (`rekon rbac`).
//! - [`release`]: a module's finalizers taken off every object (its removal).
//! - `reads`: the live reads a decision asks for; `apply`: the plan's writes.
//!
//! No file of the host names a module's controller: a new controller is a
//! module (and its RBAC, `rekon rbac`).

mod apply;
pub mod describe;
mod live;
mod object;
pub mod paths;
pub mod pin;
pub mod rbac;
mod reads;
pub mod relate;
pub mod release;
pub mod serving;
pub mod validate;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::Scope;
use rekon_contract::controller::{Decision, Input, Kind, Related};
use rekon_contract::{ControllerDecision, ControllerInput, ControllerWorld};
use rekon_machinery::queue::WorkQueue;
use serde_json::{Value, json};

pub use describe::{Checked, DescriptionError, check};
pub use object::Cached;

use crate::cache::{Cache, Change, ObjectKey};
use crate::context::Context;
use crate::decider::{Decider, Slot};
use crate::reconcile::{Outcome, ReconcileError, decide};
use crate::reconciler::Reconciler;
use crate::validate::Rejected;
use crate::watches::Watches;
use relate::{BY_NAMESPACE, Relation};

/// How many times one reconcile may ask for live reads before it must decide.
const MAX_READ_ROUNDS: usize = 4;

/// A controller module to run: its checked description and its decision slot
/// (swapped when a new version of the module is published).
#[derive(Clone)]
pub struct ControllerModule {
    pub checked: Arc<Checked>,
    pub slot: Arc<Slot<ControllerWorld>>,
    /// Pinned by the operator (guests.yaml `controllers:`): `--controllers '*'`
    /// runs it. An unpinned module (found in a development directory) runs
    /// only when `--controllers` names it.
    pub pinned: bool,
}

impl std::fmt::Debug for ControllerModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ControllerModule({})", self.name())
    }
}

impl ControllerModule {
    /// A module whose decisions come from `decider` (a loaded component, or
    /// in tests the same logic linked natively), checked from `description`.
    pub fn new(
        description: rekon_contract::controller::Description,
        decider: Arc<dyn Decider<ControllerWorld>>,
    ) -> Result<Self, DescriptionError> {
        Ok(Self {
            checked: Arc::new(check(description)?),
            slot: Arc::new(Slot::new(decider)),
            pinned: false,
        })
    }

    pub fn name(&self) -> &str {
        self.checked.name()
    }

    /// Every kind the module names: the primary, its watches, children and reads.
    pub fn kinds(&self) -> Vec<Kind> {
        let d = &self.checked.description;
        let mut kinds = vec![d.primary.clone()];
        kinds.extend(d.watches.iter().map(|w| w.kind.clone()));
        kinds.extend(d.scope.children.iter().map(|c| c.kind.clone()));
        kinds.extend(d.scope.reads.iter().map(|r| r.kind.clone()));
        kinds.sort();
        kinds.dedup();
        kinds
    }
}

/// A kind as discovery serves it.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub resource: ApiResource,
    pub namespaced: bool,
    /// Writes to `status` go through the `/status` subresource.
    pub has_status: bool,
}

/// Asks discovery how the server serves `kind`.
pub async fn resolve(client: &Client, kind: &Kind) -> Result<Resolved, kube::Error> {
    let gvk = GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind);
    let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk).await?;
    Ok(Resolved {
        namespaced: capabilities.scope == Scope::Namespaced,
        has_status: capabilities
            .subresources
            .iter()
            .any(|(sub, _)| sub.plural == "status"),
        resource,
    })
}

/// Resolves every kind of `module`; the first that is not served is an error.
pub async fn resolve_all(
    client: &Client,
    module: &ControllerModule,
) -> Result<HashMap<Kind, Resolved>, (Kind, kube::Error)> {
    let mut resolved = HashMap::new();
    for kind in module.kinds() {
        let found = resolve(client, &kind)
            .await
            .map_err(|e| (kind.clone(), e))?;
        resolved.insert(kind, found);
    }
    Ok(resolved)
}

/// One watched kind: its cache and how it relates to the primary.
struct WatchedKind {
    kind: Kind,
    cache: Arc<Cache<Cached>>,
    relation: Relation,
}

/// The generic controller, running one module.
pub struct Generic {
    name: &'static str,
    ctx: Arc<Context>,
    decider: Arc<Slot<ControllerWorld>>,
    checked: Arc<Checked>,
    kinds: HashMap<Kind, Resolved>,
    primary: Arc<Cache<Cached>>,
    watched: Vec<WatchedKind>,
    live: live::LiveLists,
    /// Its work queue, once the host started it.
    queue: OnceLock<Arc<WorkQueue<ObjectKey>>>,
}

impl Generic {
    pub fn new(
        ctx: Arc<Context>,
        module: ControllerModule,
        kinds: HashMap<Kind, Resolved>,
    ) -> Self {
        let checked = module.checked;
        let description = &checked.description;
        let relations: Vec<Relation> = description
            .watches
            .iter()
            .enumerate()
            .map(|(i, w)| Relation::new(&w.mapping, &description.primary, i))
            .collect();
        let mut primary = Cache::new().with_index(BY_NAMESPACE, object::by_namespace);
        for relation in &relations {
            primary = relation.index_primary(primary);
        }
        let watched = description
            .watches
            .iter()
            .zip(relations)
            .map(|(watch, relation)| WatchedKind {
                kind: watch.kind.clone(),
                cache: Arc::new(relation.related_cache()),
                relation,
            })
            .collect();
        Self {
            name: intern(checked.name()),
            ctx,
            decider: module.slot,
            checked,
            kinds,
            primary: Arc::new(primary),
            watched,
            live: live::LiveLists::default(),
            queue: OnceLock::new(),
        }
    }

    /// Decides every primary object again (a new version of the module
    /// serves); returns how many keys were queued.
    pub fn reevaluate_all(&self) -> usize {
        let Some(queue) = self.queue.get() else {
            return 0;
        };
        let keys = self.primary.list();
        for object in &keys {
            queue.add(object.key.clone());
        }
        keys.len()
    }

    fn resolved(&self, kind: &Kind) -> &Resolved {
        self.kinds
            .get(kind)
            .expect("every kind of the description is resolved before the controller starts")
    }

    /// An API for `kind` in `namespace` (all namespaces when empty or cluster-scoped).
    fn api(&self, kind: &Kind, namespace: &str) -> Api<DynamicObject> {
        let resolved = self.resolved(kind);
        if resolved.namespaced && !namespace.is_empty() {
            Api::namespaced_with(self.ctx.client.clone(), namespace, &resolved.resource)
        } else {
            Api::all_with(self.ctx.client.clone(), &resolved.resource)
        }
    }

    /// The cached object of a watched kind, by name in `namespace`.
    fn cached(&self, kind: &Kind, namespace: &str, name: &str) -> Option<Value> {
        let key = ObjectKey::new(namespace, name);
        self.watched
            .iter()
            .filter(|w| &w.kind == kind)
            .find_map(|w| w.cache.get(&key))
            .map(|c| c.value())
    }

    fn input(&self, primary: &Cached) -> Input {
        Input {
            primary: primary.text.to_string(),
            related: self
                .watched
                .iter()
                .map(|w| Related {
                    kind: w.kind.clone(),
                    objects: w
                        .relation
                        .related(primary, &w.cache)
                        .iter()
                        .map(|o| o.text.to_string())
                        .collect(),
                })
                .collect(),
            reads: Vec::new(),
            now: now(),
        }
    }

    /// One decision on `input`, made from the cached `primary`.
    async fn decide(
        &self,
        decider: &Arc<dyn Decider<ControllerWorld>>,
        key: &str,
        primary: &Cached,
        input: &Input,
    ) -> Result<Decision, ReconcileError> {
        let summary = json!({
            "primary": { "resourceVersion": primary.resource_version },
            "related": input.related.iter().map(|r| r.objects.len()).collect::<Vec<_>>(),
            "reads": input.reads.len(),
        });
        match decide(
            &self.ctx,
            self.name,
            key,
            decider,
            ControllerInput::Decide(input.clone()),
            summary,
        )
        .await?
        {
            ControllerDecision::Decide(decision) => Ok(decision),
            ControllerDecision::Describe(_) => Err(ReconcileError::Protocol {
                guest: decider.info().name,
                message: "answered a decision with a description".into(),
            }),
        }
    }

    async fn sync(&self, key: &ObjectKey) -> Result<Outcome, ReconcileError> {
        let Some(primary) = self.primary.get(key) else {
            return Ok(Outcome::Done);
        };
        let decider = self.decider.current();
        let key_text = key.to_string();
        let mut input = self.input(&primary);
        let mut rounds = 0;
        let actions = loop {
            match self.decide(&decider, &key_text, &primary, &input).await? {
                Decision::Actions(actions) => break actions,
                Decision::Read(requests) => {
                    rounds += 1;
                    if rounds > MAX_READ_ROUNDS {
                        return Err(ReconcileError::Protocol {
                            guest: decider.info().name,
                            message: format!(
                                "asked for live reads more than {MAX_READ_ROUNDS} times in one reconcile"
                            ),
                        });
                    }
                    let results = self.read(&key_text, &primary, &requests).await?;
                    input.reads.extend(results);
                }
            }
        };
        let plan = {
            let child = |kind: &Kind, name: &str| self.cached(kind, &key.namespace, name);
            let seen = validate::Seen {
                key: &key_text,
                primary: &primary.value(),
                child: &child,
            };
            validate::plan(&self.checked, &seen, &actions)
                .map_err(|refusal| ReconcileError::from(Rejected::from(refusal)))?
        };
        let guest = decider.info();
        let writes = plan.writes();
        let outcome = self.apply(&key_text, &primary, plan).await?;
        tracing::info!(controller = self.name, key = %key_text, guest = %guest.name,
            digest = %guest.digest, actions = actions.len(), writes, "reconciled");
        Ok(outcome)
    }
}

impl Reconciler for Generic {
    /// Built-in controllers are named by type; a module's is its own ([`Reconciler::name`]).
    const NAME: &'static str = "controller-module";
    const APIS: &'static [&'static str] = &[];
    type World = ControllerWorld;
    type Key = ObjectKey;

    fn name(&self) -> &'static str {
        self.name
    }

    fn watches(self: &Arc<Self>, watches: &mut Watches<'_, ObjectKey>) {
        let _ = self.queue.set(watches.queue().clone());
        let description = &self.checked.description;
        let primary_kind = &description.primary;
        let projection = self.checked.primary_projection.clone();
        watches.reflect(
            self.api(primary_kind, ""),
            move |object: &DynamicObject| Cached::new(&projection.project_object(object)),
            self.primary.clone(),
            |change: &Change<Cached>| match change {
                // Every change of the primary is decided, as kube-runtime's
                // Controller does; a steady state writes nothing.
                Change::Applied { old, new } => {
                    let unchanged = old
                        .as_ref()
                        .is_some_and(|old| old.resource_version == new.resource_version);
                    if unchanged {
                        Vec::new()
                    } else {
                        vec![new.key.clone()]
                    }
                }
                Change::Deleted(_) => Vec::new(),
            },
        );
        for (i, watched) in self.watched.iter().enumerate() {
            let projection = self.checked.watch_projections[i].clone();
            let this = self.clone();
            // Shared live lists of this kind must postdate what enqueued a key.
            let shared = self.checked.read(&watched.kind).is_some_and(|read| {
                read.freshness == rekon_contract::controller::Freshness::AfterObserved
            });
            watches.reflect(
                self.api(&watched.kind, ""),
                move |object: &DynamicObject| Cached::new(&projection.project_object(object)),
                watched.cache.clone(),
                move |change: &Change<Cached>| {
                    let watched = &this.watched[i];
                    let keys = watched.relation.keys(change, &this.primary);
                    if shared {
                        let mut namespaces: Vec<&str> =
                            keys.iter().map(|k| k.namespace.as_str()).collect();
                        namespaces.dedup();
                        for namespace in namespaces {
                            this.live.changed(&watched.kind, namespace);
                        }
                    }
                    keys
                },
            );
        }
    }

    async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, ReconcileError> {
        self.sync(key).await
    }
}

/// The host's clock for a decision: RFC 3339 in UTC with milliseconds
/// (`2026-11-26T12:00:00.250Z`), truncated (jiff's precision truncates), so a
/// decision never sees a time that has not come yet (a TTL never ends early)
/// and a requeue-after computed from it is late by under a millisecond.
fn now() -> String {
    format!("{:.3}", k8s_openapi::jiff::Timestamp::now())
}

/// A module's name as the `&'static str` metrics and logs take: each distinct
/// name is allocated once for the life of the process.
fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap();
    if let Some(known) = names.iter().find(|n| **n == name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(leaked);
    leaked
}
