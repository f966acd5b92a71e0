//! Garbage collector for ownerReferences (row 14) and the namespace controller's cleanup.
//!
//! - Background: a dependent whose owners are all gone is deleted.
//! - Foreground: an owner with the `foregroundDeletion` finalizer has its dependents deleted and
//!   loses the finalizer once no dependent with `blockOwnerDeletion: true` remains.
//! - Orphan: an owner with the `orphan` finalizer has its ownerReference removed from every
//!   dependent, then loses the finalizer.
//! - A Terminating namespace is emptied, then removed.
//!
//! Each pass works on a snapshot and writes through the store with uid/resourceVersion
//! preconditions; a write that loses a race is simply redone by the next pass.

use std::collections::HashMap;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::meta;
use crate::registry::{DeleteOptions, PropagationPolicy, Store, Target, WriteOptions};
use crate::registry::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use crate::resources;
use crate::store::ObjectKey;

const GC_MANAGER: &str = "generic-garbage-collector";

pub async fn run(store: Store, shutdown: CancellationToken) {
    let mut changes = store.subscribe();
    loop {
        sweep(&store);
        if !super::next_change(&mut changes, None, &shutdown).await {
            return;
        }
    }
}

/// One pass over all objects.
pub fn sweep(store: &Store) {
    let objects: Vec<(ObjectKey, Value)> = store.read(|objs| {
        objs.iter_all()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    });
    let by_uid: HashMap<&str, (&ObjectKey, &Value)> = objects
        .iter()
        .map(|(k, v)| (meta::uid(v), (k, v)))
        .collect();
    let owner_present = |dependent: &ObjectKey, reference: &Value| {
        let uid = reference.get("uid").and_then(Value::as_str).unwrap_or("");
        by_uid.get(uid).is_some_and(|(owner_key, _)| {
            owner_key.namespace.is_empty() || owner_key.namespace == dependent.namespace
        })
    };

    for (key, obj) in &objects {
        let refs = meta::owner_references(obj);
        if !refs.is_empty()
            && !meta::is_deleting(obj)
            && !refs.iter().any(|r| owner_present(key, r))
        {
            delete(store, key, obj, PropagationPolicy::Background);
        }
    }

    for (owner_key, owner) in objects.iter().filter(|(_, o)| meta::is_deleting(o)) {
        let owner_uid = meta::uid(owner);
        let dependents: Vec<&(ObjectKey, Value)> = objects
            .iter()
            .filter(|(_, d)| {
                meta::owner_references(d)
                    .iter()
                    .any(|r| r["uid"] == owner_uid)
            })
            .collect();
        let finalizers = meta::finalizers(owner);
        if finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
            for (key, dependent) in &dependents {
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
            for (key, dependent) in &dependents {
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
            finish_namespace(store, owner_key, owner, &objects);
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
fn finish_namespace(store: &Store, ns_key: &ObjectKey, ns: &Value, objects: &[(ObjectKey, Value)]) {
    let mut remaining = false;
    for (key, obj) in objects.iter().filter(|(k, _)| k.namespace == ns_key.name) {
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
