//! Delete (rows 4, 5, 6, 14): preconditions, finalizers, graceful pod deletion and the
//! garbage-collection finalizers a propagation policy asks for.

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};

use super::{DeleteOptions, PropagationPolicy, Target};
use crate::errors::ApiError;
use crate::meta;
use crate::resources::ResourceInfo;
use crate::store::Objects;

pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
pub const ORPHAN_FINALIZER: &str = "orphan";
const DEFAULT_GRACE_SECONDS: i64 = 30;

/// What a DELETE did.
#[derive(Debug, Clone, PartialEq)]
pub enum DeleteOutcome {
    /// The object still exists (finalizers pending or graceful deletion under way); its
    /// current state.
    Deleting(Value),
    /// The object is gone; its last stored state (pre-delete resourceVersion).
    Deleted(Value),
}

pub fn delete(
    objs: &mut Objects,
    target: &Target,
    opts: &DeleteOptions,
    now: DateTime<Utc>,
) -> Result<DeleteOutcome, ApiError> {
    let info = target.resource.info();
    let key = target.key();
    let current = objs
        .get(&key)
        .ok_or_else(|| ApiError::not_found(info, &target.name))?;
    check_preconditions(info, &target.name, &current, opts)?;

    let mut obj = current.clone();
    if target.resource == crate::resources::custom_resource_definitions() {
        crate::crd::definition::mark_terminating(&mut obj, &meta::format_time(now));
    }
    if info.kind == "Namespace" && has_namespace_finalizers(&obj) {
        mark_namespace_terminating(&mut obj, now);
        return Ok(DeleteOutcome::Deleting(write_if_changed(
            objs, &key, &current, obj,
        )));
    }
    let graceful = match before_delete(info, &mut obj, opts, now) {
        GracefulState::Pending => return Ok(DeleteOutcome::Deleting(current)),
        GracefulState::Graceful => true,
        GracefulState::NotGraceful => false,
    };
    apply_propagation_finalizers(info, &mut obj, opts);
    let pending_finalizers = !meta::finalizers(&obj).is_empty();

    if graceful {
        let stored = write_if_changed(objs, &key, &current, obj);
        if pending_finalizers || meta::deletion_grace_period(&stored).unwrap_or(0) > 0 {
            return Ok(DeleteOutcome::Deleting(stored));
        }
        objs.remove(&key);
        return Ok(DeleteOutcome::Deleted(stored));
    }
    if pending_finalizers {
        mark_as_deleting(&mut obj, now);
        return Ok(DeleteOutcome::Deleting(write_if_changed(
            objs, &key, &current, obj,
        )));
    }
    objs.remove(&key);
    Ok(DeleteOutcome::Deleted(current))
}

fn write_if_changed(
    objs: &mut Objects,
    key: &crate::store::ObjectKey,
    current: &Value,
    obj: Value,
) -> Value {
    if &obj == current {
        current.clone()
    } else {
        objs.put(key.clone(), obj)
    }
}

/// Upstream checks preconditions after the 404 and before anything else, also on an object
/// already being deleted; the message names the Kind.
fn check_preconditions(
    info: &ResourceInfo,
    name: &str,
    current: &Value,
    opts: &DeleteOptions,
) -> Result<(), ApiError> {
    let Some(pre) = &opts.preconditions else {
        return Ok(());
    };
    if let Some(uid) = pre.uid.as_deref()
        && uid != meta::uid(current)
    {
        return Err(ApiError::precondition_failed(
            info,
            name,
            format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                meta::uid(current)
            ),
        ));
    }
    if let Some(rv) = pre.resource_version.as_deref()
        && Some(rv) != meta::resource_version(current)
    {
        return Err(ApiError::precondition_failed(
            info,
            name,
            format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                meta::resource_version(current).unwrap_or("")
            ),
        ));
    }
    Ok(())
}

enum GracefulState {
    /// A graceful deletion is already under way and this request does not shorten it.
    Pending,
    /// `obj` now carries the (new) deletionTimestamp and grace period.
    Graceful,
    NotGraceful,
}

/// Upstream `rest.BeforeDelete` with the pod strategy's `CheckGracefulDelete`.
fn before_delete(
    info: &ResourceInfo,
    obj: &mut Value,
    opts: &DeleteOptions,
    now: DateTime<Utc>,
) -> GracefulState {
    if !info.graceful {
        return GracefulState::NotGraceful;
    }
    if let Some(existing) = meta::deletion_timestamp(obj).and_then(meta::parse_time) {
        let current_grace = meta::deletion_grace_period(obj).unwrap_or(0);
        if current_grace == 0 {
            return GracefulState::NotGraceful;
        }
        return match opts.grace_period_seconds {
            Some(period) if period < current_grace => {
                // Only a shorter grace period may be given; the deadline moves earlier, counted
                // from when the graceful deletion started.
                let moved =
                    existing - Duration::seconds(current_grace) + Duration::seconds(period.max(0));
                let m = meta::metadata_mut(obj);
                m.insert("deletionTimestamp".into(), json!(meta::format_time(moved)));
                m.insert("deletionGracePeriodSeconds".into(), json!(period.max(0)));
                GracefulState::Graceful
            }
            _ => GracefulState::Pending,
        };
    }
    let mut grace = opts
        .grace_period_seconds
        .or_else(|| {
            obj.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(DEFAULT_GRACE_SECONDS)
        .max(0);
    let unscheduled = obj
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    let phase = obj
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if unscheduled || phase == "Failed" || phase == "Succeeded" {
        grace = 0;
    }
    let m = meta::metadata_mut(obj);
    m.insert(
        "deletionTimestamp".into(),
        json!(meta::format_time(now + Duration::seconds(grace))),
    );
    m.insert("deletionGracePeriodSeconds".into(), json!(grace));
    if let Some(generation) = m
        .get("generation")
        .and_then(Value::as_i64)
        .filter(|g| *g > 0)
    {
        m.insert("generation".into(), json!(generation + 1));
    }
    GracefulState::Graceful
}

/// Upstream `deletionFinalizersForGarbageCollection`: Orphan (the default of some kinds) adds
/// `orphan`, Foreground adds `foregroundDeletion`, Background removes both. The garbage collector acts on them.
fn apply_propagation_finalizers(info: &ResourceInfo, obj: &mut Value, opts: &DeleteOptions) {
    let policy = match (opts.propagation_policy, opts.orphan_dependents) {
        (Some(policy), _) => policy,
        (None, Some(true)) => PropagationPolicy::Orphan,
        (None, Some(false)) => PropagationPolicy::Background,
        // Upstream `DefaultGarbageCollectionPolicy`; an object's own `orphan` finalizer stays.
        (None, None) if info.orphans_by_default => PropagationPolicy::Orphan,
        (None, None) => return,
    };
    let mut finalizers = meta::finalizers(obj);
    let before = finalizers.clone();
    finalizers.retain(|f| f != ORPHAN_FINALIZER && f != FOREGROUND_FINALIZER);
    match policy {
        PropagationPolicy::Orphan => finalizers.push(ORPHAN_FINALIZER.into()),
        PropagationPolicy::Foreground => finalizers.push(FOREGROUND_FINALIZER.into()),
        PropagationPolicy::Background => {}
    }
    if finalizers != before {
        meta::set_finalizers(obj, &finalizers);
    }
}

fn has_namespace_finalizers(ns: &Value) -> bool {
    ns.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
}

/// A namespace with `spec.finalizers` is only marked: it stays Terminating until the namespace
/// controller (the garbage collector here) has emptied it.
fn mark_namespace_terminating(ns: &mut Value, now: DateTime<Utc>) {
    if !meta::is_deleting(ns) {
        let m = meta::metadata_mut(ns);
        m.insert("deletionTimestamp".into(), json!(meta::format_time(now)));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
    }
    ns["status"] = json!({"phase": "Terminating"});
}

/// Upstream `markAsDeleting`: deletionTimestamp set once (only ever moved earlier), grace 0,
/// generation bumped the first time if the object tracks it.
fn mark_as_deleting(obj: &mut Value, now: DateTime<Utc>) {
    let existing = meta::deletion_timestamp(obj).and_then(meta::parse_time);
    let m = meta::metadata_mut(obj);
    if existing.is_none()
        && let Some(generation) = m
            .get("generation")
            .and_then(Value::as_i64)
            .filter(|g| *g > 0)
    {
        m.insert("generation".into(), json!(generation + 1));
    }
    if existing.is_none_or(|ts| ts > now) {
        m.insert("deletionTimestamp".into(), json!(meta::format_time(now)));
    }
    m.insert("deletionGracePeriodSeconds".into(), json!(0));
}
