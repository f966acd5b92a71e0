//! Garbage collector for ownerReferences (row 14) and the namespace controller's cleanup.
//!
//! - Background: a dependent whose owners are all gone is deleted.
//! - Foreground: an owner with the `foregroundDeletion` finalizer has its dependents deleted and
//!   loses the finalizer once no dependent with `blockOwnerDeletion: true` remains.
//! - Orphan: an owner with the `orphan` finalizer has its ownerReference removed from every
//!   dependent, then loses the finalizer.
//! - A Terminating namespace is emptied, then removed.
//!
//! A pass looks only at what the writes since the last pass can have changed: each written
//! object, the owners it names, the dependents of a deleted object (from the store's owner
//! index, by uid), and its namespace if that is Terminating. So a write costs its own
//! dependents, not a scan of every object. After the watch history was compacted past the
//! last pass, one pass looks at everything. A pass plans under the store's read lock, copying
//! only the objects it acts on, and writes through the store with uid/resourceVersion
//! preconditions; a write that loses a race is an event the next pass looks at again.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::meta;
use crate::resources;
use crate::store::{EventType, ObjectKey, Objects, WatchEvent};
use crate::stored::{Ownership, Stored};
use crate::verbs::{DeleteOptions, PropagationPolicy, Store, Target, WriteOptions};
use crate::verbs::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};

const GC_MANAGER: &str = "generic-garbage-collector";

pub async fn run(store: Store, shutdown: CancellationToken) {
    let mut changes = store.subscribe();
    let mut collector = Collector::default();
    loop {
        collector.pass(&store);
        if !super::next_change(&mut changes, None, &shutdown).await {
            return;
        }
    }
}

/// The collector's progress through the store's changes.
#[derive(Debug, Default)]
pub struct Collector {
    /// Writes up to this resourceVersion have been looked at.
    seen: u64,
}

impl Collector {
    /// Acts on the writes since the last pass; returns how many stored objects the pass
    /// looked at (its cost, independent of how many objects the store holds unless the
    /// history was compacted).
    pub fn pass(&mut self, store: &Store) -> usize {
        let changes = match store.events_since(self.seen) {
            Ok(events) => {
                let Some(last) = events.last() else {
                    return 0;
                };
                self.seen = last.rv;
                Changes::Since(events.iter().map(|e| Touched::from(e.as_ref())).collect())
            }
            Err(_) => {
                self.seen = store.current_resource_version();
                Changes::All
            }
        };
        let plan = store.read(|objs| plan(objs, &changes));
        let examined = plan.examined;
        execute(store, &plan);
        examined
    }
}

/// What one write can have changed for the collector.
struct Touched {
    key: ObjectKey,
    deleted: bool,
    uid: String,
    /// Owners named before or after the write.
    owners: BTreeSet<String>,
}

impl From<&WatchEvent> for Touched {
    fn from(event: &WatchEvent) -> Self {
        let Ownership { uid, owners } = event.object.ownership();
        let mut owners: BTreeSet<String> = owners.into_iter().collect();
        if let Some(previous) = &event.previous {
            owners.extend(previous.ownership().owners);
        }
        Touched {
            key: event.key.clone(),
            deleted: event.event_type == EventType::Deleted,
            uid,
            owners,
        }
    }
}

enum Changes {
    /// The history no longer covers the last pass: look at everything.
    All,
    Since(Vec<Touched>),
}

type Entry = (ObjectKey, Value);

/// A deleting owner the collector finishes, with copies of what it needs.
struct Owner {
    entry: Entry,
    dependents: Vec<Entry>,
    /// For a namespace: every object in it.
    contents: Vec<Entry>,
}

/// What one pass acts on.
struct Plan {
    /// Dependents whose owners are all gone.
    orphaned: Vec<Entry>,
    owners: Vec<Owner>,
    /// Stored objects looked at.
    examined: usize,
}

/// Keys to look at: possible orphans, and possible deleting owners (or namespaces).
#[derive(Default)]
struct Candidates {
    dependents: BTreeSet<ObjectKey>,
    owners: BTreeSet<ObjectKey>,
}

fn candidates(objs: &Objects, changes: &Changes) -> Candidates {
    let mut found = Candidates::default();
    match changes {
        Changes::All => {
            for (key, obj) in objs.iter_all() {
                let obj = obj.decode();
                if !meta::owner_references(&obj).is_empty() {
                    found.dependents.insert(key.clone());
                }
                if meta::is_deleting(&obj) {
                    found.owners.insert(key.clone());
                }
            }
        }
        Changes::Since(touched) => {
            for t in touched {
                if t.deleted {
                    found
                        .dependents
                        .extend(objs.dependents_of(&t.uid).map(|(k, _)| k.clone()));
                } else {
                    found.dependents.insert(t.key.clone());
                    found.owners.insert(t.key.clone());
                }
                for owner in &t.owners {
                    if let Some(key) = objs.key_by_uid(owner) {
                        found.owners.insert(key.clone());
                    }
                }
                if !t.key.namespace.is_empty() {
                    found.owners.insert(ObjectKey::new(
                        resources::namespaces(),
                        "",
                        &t.key.namespace,
                    ));
                }
            }
        }
    }
    found
}

/// Whether an owner `obj` names is stored (in its namespace, for a namespaced owner).
fn owner_present(objs: &Objects, key: &ObjectKey, obj: &Value) -> bool {
    Ownership::of(obj).owners.iter().any(|uid| {
        objs.key_by_uid(uid).is_some_and(|owner_key| {
            owner_key.namespace.is_empty() || owner_key.namespace == key.namespace
        })
    })
}

fn plan(objs: &Objects, changes: &Changes) -> Plan {
    let copy = |(k, v): (&ObjectKey, &Stored)| (k.clone(), v.decode());
    let candidates = candidates(objs, changes);
    let mut examined = 0;
    let mut orphaned = Vec::new();
    for key in &candidates.dependents {
        let Some(obj) = objs.get_stored(key).map(Stored::decode) else {
            continue;
        };
        examined += 1;
        if !meta::owner_references(&obj).is_empty()
            && !meta::is_deleting(&obj)
            && !owner_present(objs, key, &obj)
        {
            orphaned.push((key.clone(), obj));
        }
    }
    let mut owners = Vec::new();
    for key in &candidates.owners {
        let Some(obj) = objs
            .get_stored(key)
            .map(Stored::decode)
            .filter(meta::is_deleting)
        else {
            continue;
        };
        examined += 1;
        let collects = meta::finalizers(&obj)
            .iter()
            .any(|f| f == ORPHAN_FINALIZER || f == FOREGROUND_FINALIZER);
        let namespace = key.resource == resources::namespaces();
        if !collects && !namespace {
            continue;
        }
        let dependents: Vec<Entry> = objs.dependents_of(meta::uid(&obj)).map(copy).collect();
        let contents: Vec<Entry> = if namespace {
            objs.iter_namespace(&key.name).map(copy).collect()
        } else {
            Vec::new()
        };
        examined += dependents.len() + contents.len();
        owners.push(Owner {
            entry: (key.clone(), obj),
            dependents,
            contents,
        });
    }
    Plan {
        orphaned,
        owners,
        examined,
    }
}

/// One pass over all objects, as after a compaction; returns the objects looked at.
pub fn sweep(store: &Store) -> usize {
    let plan = store.read(|objs| plan(objs, &Changes::All));
    execute(store, &plan);
    plan.examined
}

fn execute(store: &Store, plan: &Plan) {
    for (key, obj) in &plan.orphaned {
        delete(store, key, obj, PropagationPolicy::Background);
    }
    for Owner {
        entry: (owner_key, owner),
        dependents,
        contents,
    } in &plan.owners
    {
        let owner_uid = meta::uid(owner);
        let finalizers = meta::finalizers(owner);
        if finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
            for (key, dependent) in dependents {
                modify(store, key, dependent, |obj| {
                    let kept: Vec<Value> = meta::owner_references(obj)
                        .iter()
                        .filter(|r| r["uid"] != owner_uid)
                        .cloned()
                        .collect();
                    let m = meta::metadata_mut(obj);
                    if kept.is_empty() {
                        m.remove("ownerReferences");
                    } else {
                        m.insert("ownerReferences".into(), json!(kept));
                    }
                });
            }
            if dependents.is_empty() {
                remove_finalizer(store, owner_key, owner, ORPHAN_FINALIZER);
            }
        } else if finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
            for (key, dependent) in dependents {
                if !meta::is_deleting(dependent) {
                    delete(store, key, dependent, PropagationPolicy::Foreground);
                }
            }
            let blocking = dependents.iter().any(|(_, d)| {
                meta::owner_references(d)
                    .iter()
                    .any(|r| r["uid"] == owner_uid && r["blockOwnerDeletion"] == json!(true))
            });
            if !blocking {
                remove_finalizer(store, owner_key, owner, FOREGROUND_FINALIZER);
            }
        }
        if owner_key.resource == resources::namespaces() {
            finish_namespace(store, owner_key, owner, contents);
        }
    }
}

fn delete(store: &Store, key: &ObjectKey, obj: &Value, policy: PropagationPolicy) {
    let target = Target::new(key.resource, &key.namespace, &key.name);
    let opts = DeleteOptions {
        propagation_policy: Some(policy),
        ..DeleteOptions::with_preconditions(Some(meta::uid(obj)), None)
    };
    if let Err(err) = store.delete(&target, &opts) {
        tracing::debug!(object = %key, %err, "garbage collector: delete failed");
    }
}

/// Rewrites `obj` with `change`, conditional on the resourceVersion the pass saw.
fn modify(store: &Store, key: &ObjectKey, obj: &Value, change: impl FnOnce(&mut Value)) {
    let mut updated = obj.clone();
    change(&mut updated);
    if &updated == obj {
        return;
    }
    let target = Target::new(key.resource, &key.namespace, &key.name);
    if let Err(err) = store.update(&target, updated, &WriteOptions::manager(GC_MANAGER)) {
        tracing::debug!(object = %key, %err, "garbage collector: update failed");
    }
}

fn remove_finalizer(store: &Store, key: &ObjectKey, obj: &Value, finalizer: &str) {
    modify(store, key, obj, |o| {
        let kept: Vec<String> = meta::finalizers(o)
            .into_iter()
            .filter(|f| f != finalizer)
            .collect();
        meta::set_finalizers(o, &kept);
    });
}

/// The namespace controller: delete everything in a Terminating namespace, then the namespace.
fn finish_namespace(store: &Store, ns_key: &ObjectKey, ns: &Value, contents: &[Entry]) {
    let mut remaining = false;
    for (key, obj) in contents {
        remaining = true;
        if !meta::is_deleting(obj) {
            delete(store, key, obj, PropagationPolicy::Background);
        } else if key.resource == resources::pods() {
            // Nothing else will finish a terminating pod in a deleted namespace.
            let target = Target::new(key.resource, &key.namespace, &key.name);
            let opts = DeleteOptions {
                grace_period_seconds: Some(0),
                ..DeleteOptions::with_preconditions(Some(meta::uid(obj)), None)
            };
            let _ = store.delete(&target, &opts);
        }
    }
    if remaining {
        return;
    }
    modify(store, ns_key, ns, |o| {
        o["spec"]["finalizers"] = json!([]);
    });
    let target = Target::new(ns_key.resource, "", &ns_key.name);
    if let Err(err) = store.delete(&target, &DeleteOptions::default()) {
        tracing::debug!(namespace = %ns_key.name, %err, "garbage collector: namespace removal failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::HistoryLimits;
    use crate::verbs::StoreSettings;

    fn store() -> Store {
        Store::new(StoreSettings {
            history: HistoryLimits::default(),
            seed: 1,
            pvc_protection_admission: false,
        })
    }

    fn create(store: &Store, name: &str, owner: Option<&Value>) -> Value {
        let mut obj = json!({"metadata": {"name": name}});
        if let Some(owner) = owner {
            obj["metadata"]["ownerReferences"] = json!([{
                "apiVersion": "v1", "kind": "ConfigMap",
                "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            }]);
        }
        let cms = resources::by_plural("", "configmaps").unwrap();
        store
            .create(cms, "default", obj, &WriteOptions::default())
            .unwrap()
    }

    /// Objects the pass after deleting an owner looks at, with `unrelated` other objects.
    fn examined_after_owner_delete(unrelated: usize) -> usize {
        let store = store();
        for i in 0..unrelated {
            create(&store, &format!("other-{i}"), None);
        }
        let owner = create(&store, "owner", None);
        create(&store, "dependent", Some(&owner));
        let mut collector = Collector::default();
        collector.pass(&store);
        let cms = resources::by_plural("", "configmaps").unwrap();
        store
            .delete(
                &Target::new(cms, "default", "owner"),
                &DeleteOptions::default(),
            )
            .unwrap();
        let examined = collector.pass(&store);
        assert!(
            store.get(cms, "default", "dependent").is_err(),
            "the dependent of the deleted owner is collected"
        );
        assert!(store.get(cms, "default", "other-0").is_ok() || unrelated == 0);
        examined
    }

    #[test]
    fn a_write_costs_its_dependents_not_the_number_of_objects() {
        let few = examined_after_owner_delete(10);
        let many = examined_after_owner_delete(3_000);
        assert_eq!(few, many, "objects looked at after one delete");
        assert!(few <= 2, "{few}");
    }

    #[test]
    fn after_a_compaction_a_pass_looks_at_everything() {
        let store = store();
        let owner = create(&store, "owner", None);
        let mut orphan = json!({"metadata": {"name": "orphan", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "no-such-uid"}]}});
        let cms = resources::by_plural("", "configmaps").unwrap();
        orphan = store
            .create(cms, "default", orphan, &WriteOptions::default())
            .unwrap();
        create(&store, "kept", Some(&owner));
        store.compact();
        let mut collector = Collector::default();
        assert!(collector.pass(&store) >= 2);
        assert!(store.get(cms, "default", "orphan").is_err(), "{orphan}");
        assert!(store.get(cms, "default", "kept").is_ok());
        assert_eq!(collector.pass(&store), 0, "then nothing is left to look at");
    }
}
