//! Garbage collector for ownerReferences (row 14) and the namespace controller's cleanup.
//!
//! - Background: a dependent whose owners are all gone is deleted.
//! - Foreground: an owner with the `foregroundDeletion` finalizer has its dependents deleted and
//!   loses the finalizer once no dependent with `blockOwnerDeletion: true` remains.
//! - Orphan: an owner with the `orphan` finalizer has its ownerReference removed from every
//!   dependent, then loses the finalizer.
//! - A Terminating namespace is emptied, then removed.
//!
//! A pass runs only after a write that can give it work (a delete, or an object that is
//! deleting or has owners). It plans under the store's read lock, copying only the objects it
//! acts on, and writes through the store with uid/resourceVersion preconditions; a write that
//! loses a race is simply redone by the next pass.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::meta;
use crate::registry::{DeleteOptions, PropagationPolicy, Store, Target, WriteOptions};
use crate::registry::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use crate::resources;
use crate::store::{EventType, ObjectKey, Objects};

const GC_MANAGER: &str = "generic-garbage-collector";

pub async fn run(store: Store, shutdown: CancellationToken) {
    let mut changes = store.subscribe();
    let mut seen = 0;
    loop {
        if has_work(&store, &mut seen) {
            sweep(&store);
        }
        if !super::next_change(&mut changes, None, &shutdown).await {
            return;
        }
    }
}

/// Whether a write after `seen` can give the collector work; advances `seen`. After a
/// compaction the events are gone and a pass always runs.
fn has_work(store: &Store, seen: &mut u64) -> bool {
    let involved = |obj: &Value| meta::is_deleting(obj) || !meta::owner_references(obj).is_empty();
    match store.events_since(*seen) {
        Ok(events) => {
            let Some(last) = events.last() else {
                return false;
            };
            *seen = last.rv;
            events.iter().any(|e| {
                e.event_type == EventType::Deleted
                    || involved(&e.object)
                    || e.previous.as_ref().is_some_and(involved)
            })
        }
        Err(_) => {
            *seen = store.current_resource_version();
            true
        }
    }
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
}

fn plan(objs: &Objects) -> Plan {
    let copy = |(k, v): (&ObjectKey, &Value)| (k.clone(), v.clone());
    let by_uid: HashMap<&str, &ObjectKey> =
        objs.iter_all().map(|(k, v)| (meta::uid(v), k)).collect();
    let mut dependents: HashMap<&str, Vec<(&ObjectKey, &Value)>> = HashMap::new();
    let mut orphaned = Vec::new();
    for (key, obj) in objs.iter_all() {
        let refs = meta::owner_references(obj);
        if refs.is_empty() {
            continue;
        }
        let mut owners_present = false;
        let mut counted = HashSet::new();
        for reference in refs {
            let uid = reference.get("uid").and_then(Value::as_str).unwrap_or("");
            owners_present |= by_uid.get(uid).is_some_and(|owner_key| {
                owner_key.namespace.is_empty() || owner_key.namespace == key.namespace
            });
            if counted.insert(uid) {
                dependents.entry(uid).or_default().push((key, obj));
            }
        }
        if !owners_present && !meta::is_deleting(obj) {
            orphaned.push(copy((key, obj)));
        }
    }
    let mut owners = Vec::new();
    for (key, obj) in objs.iter_all().filter(|(_, o)| meta::is_deleting(o)) {
        let finalizers = meta::finalizers(obj);
        let collects = finalizers
            .iter()
            .any(|f| f == ORPHAN_FINALIZER || f == FOREGROUND_FINALIZER);
        let namespace = key.resource == resources::namespaces();
        if !collects && !namespace {
            continue;
        }
        let mine = dependents
            .get(meta::uid(obj))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let contents = if namespace {
            objs.iter_all()
                .filter(|(k, _)| k.namespace == key.name)
                .map(copy)
                .collect()
        } else {
            Vec::new()
        };
        owners.push(Owner {
            entry: copy((key, obj)),
            dependents: mine.iter().map(|&d| copy(d)).collect(),
            contents,
        });
    }
    Plan { orphaned, owners }
}

/// One pass over all objects.
pub fn sweep(store: &Store) {
    let plan = store.read(plan);
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
