//! Update (rows 2, 3, 5, 9): optimistic concurrency, the status subresource split, system
//! metadata an update cannot change, and deletion when the last finalizer goes.

use serde_json::{Value, json};

use super::{Store, Target, WriteOptions, now, prepare};
use crate::errors::{ApiError, Cause};
use crate::meta;
use crate::patch::fieldset;
use crate::resources::StatusWrite;
use crate::store::Objects;

pub enum Tracking<'a> {
    /// Record ownership of the changed fields (PUT, non-apply PATCH).
    Record(&'a WriteOptions),
    /// The body already carries the managedFields (server-side apply).
    Precomputed,
}

pub fn update(
    objs: &mut Objects,
    store: &Store,
    target: &Target,
    body: Value,
    tracking: Tracking,
) -> Result<Value, ApiError> {
    let info = target.resource.info();
    let key = target.key();
    let mut body = prepare::decode(info, body, &target.namespace)?;
    let custom = store.custom_resources();
    custom.admit(target.resource, &mut body, false)?;
    // Upstream's handler compares the names before the storage looks the object up, so a
    // mismatch is a 400 even when the object does not exist.
    let body_name = meta::name(&body);
    if !body_name.is_empty() && body_name != target.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({})",
            target.name
        )));
    }
    let current = objs
        .get(&key)
        .ok_or_else(|| ApiError::not_found(info, &target.name))?;
    // Custom resources allow no unconditional update (upstream's CR strategy).
    if info.custom && meta::resource_version(&body).is_none_or(str::is_empty) {
        return Err(ApiError::invalid_kind(
            info.plural,
            info.group,
            &target.name,
            vec![Cause::new(
                "FieldValueInvalid",
                "Invalid value: 0x0: must be specified for an update",
                Some("metadata.resourceVersion"),
            )],
        ));
    }
    if let Some(rv) = meta::resource_version(&body)
        && Some(rv) != meta::resource_version(&current)
    {
        return Err(ApiError::conflict_modified(info, &target.name));
    }

    let mut new = split_subresource(info, target.status, &current, body);
    meta::metadata_mut(&mut new).insert("name".into(), json!(target.name));
    let mut causes = preserve_system_metadata(&current, &mut new);
    if meta::is_deleting(&current) {
        let old = meta::finalizers(&current);
        let added: Vec<String> = meta::finalizers(&new)
            .into_iter()
            .filter(|f| !old.contains(f))
            .collect();
        if !added.is_empty() {
            let quoted: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
            causes.push(Cause::new(
                "FieldValueForbidden",
                format!(
                    "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    quoted.join(", ")
                ),
                Some("metadata.finalizers"),
            ));
        }
    }
    causes.extend(prepare::validate(info, &new));
    causes.extend(custom.validate(target.resource, &new));
    if !causes.is_empty() {
        return Err(ApiError::invalid(info, &target.name, causes));
    }
    if info.manages_generation && !target.status && generation_changes(info, &current, &new) {
        let generation = meta::generation(&current).unwrap_or(0) + 1;
        meta::metadata_mut(&mut new).insert("generation".into(), json!(generation));
    }
    match tracking {
        Tracking::Record(opts) => {
            meta::copy_field(&current, &mut new, "managedFields");
            if let Some(manager) = opts.manager_for(&current) {
                let subresource = target.status.then_some("status");
                let timestamp = meta::format_time(now());
                fieldset::record_update(
                    &current,
                    &mut new,
                    manager,
                    subresource,
                    &info.api_version(),
                    &timestamp,
                );
            }
        }
        Tracking::Precomputed => {}
    }
    meta::copy_field(&current, &mut new, "resourceVersion");

    if new == current {
        // etcd3 skips a write that changes nothing: same resourceVersion, no event.
        return Ok(current);
    }
    let grace_done = meta::deletion_grace_period(&current).unwrap_or(0) == 0;
    let namespace_finalized = info.kind != "Namespace"
        || new
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
    if meta::is_deleting(&current)
        && grace_done
        && meta::finalizers(&new).is_empty()
        && namespace_finalized
    {
        // Upstream ShouldDeleteDuringUpdate: the update deletes the object. The response is the
        // updated object with the pre-delete resourceVersion; watchers get the stored state.
        objs.remove(&key);
        return Ok(new);
    }
    Ok(objs.put(key, new))
}

/// The generation follows any change but metadata (and status, with the status
/// subresource): the spec of most kinds, the top-level lists of kinds without a spec (webhook
/// configurations), and a custom resource's content, as upstream's strategies do.
fn generation_changes(info: &crate::resources::ResourceInfo, current: &Value, new: &Value) -> bool {
    let content = |obj: &Value| -> Value {
        let mut obj = obj.clone();
        if let Some(map) = obj.as_object_mut() {
            map.remove("metadata");
            if info.has_status {
                map.remove("status");
            }
        }
        obj
    };
    content(current) != content(new)
}

/// What the body may change: status through `/status` (with the metadata its
/// [`StatusWrite`] allows), everything but status through the main resource.
fn split_subresource(
    info: &crate::resources::ResourceInfo,
    status: bool,
    current: &Value,
    body: Value,
) -> Value {
    if status {
        if info.status_write == StatusWrite::StatusOnly {
            let mut new = current.clone();
            meta::copy_top_level(&body, &mut new, "status");
            return new;
        }
        let mut new = body;
        meta::copy_top_level(current, &mut new, "spec");
        if info.kind == "Pod" {
            meta::copy_field(current, &mut new, "ownerReferences");
        }
        if info.status_write == StatusWrite::WithAnnotations {
            meta::copy_field(current, &mut new, "labels");
        }
        new
    } else if info.has_status {
        let mut new = body;
        meta::copy_top_level(current, &mut new, "status");
        new
    } else {
        body
    }
}

/// Upstream `BeforeUpdate` + `ValidateObjectMetaUpdate`: generation, uid, creationTimestamp and
/// the deletion fields come from the stored object; changing uid or setting a deletionTimestamp
/// is invalid.
fn preserve_system_metadata(current: &Value, new: &mut Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let immutable = |field: &str, value: &Value| {
        Cause::new(
            "FieldValueInvalid",
            format!("Invalid value: {}: field is immutable", render(value)),
            Some(&format!("metadata.{field}")),
        )
    };
    let new_uid = meta::uid(new).to_string();
    if !new_uid.is_empty() && new_uid != meta::uid(current) {
        causes.push(immutable("uid", &json!(new_uid)));
    }
    if !meta::is_deleting(current)
        && let Some(ts) = meta::deletion_timestamp(new)
    {
        causes.push(immutable("deletionTimestamp", &json!(ts)));
    }
    for field in [
        "uid",
        "creationTimestamp",
        "generation",
        "deletionTimestamp",
    ] {
        meta::copy_field(current, new, field);
    }
    if meta::deletion_grace_period(current).is_some() {
        meta::copy_field(current, new, "deletionGracePeriodSeconds");
    } else {
        meta::metadata_mut(new).remove("deletionGracePeriodSeconds");
    }
    causes
}

fn render(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}
