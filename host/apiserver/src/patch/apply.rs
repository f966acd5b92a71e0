//! Server-side apply (row 10): merge an apply configuration into the live object, with field
//! ownership, conflicts (409 unless forced) and removal of fields the manager stopped applying.

use serde_json::{Map, Value};

use super::fieldset::{self, FieldSet, ManagedEntry, get_path, overlaps};
use crate::errors::ApiError;
use crate::resources::ResourceInfo;

pub struct ApplyRequest<'a> {
    pub info: &'static ResourceInfo,
    pub manager: &'a str,
    pub force: bool,
    /// `Some("status")` for an apply to the status subresource.
    pub subresource: Option<&'a str>,
    pub now: &'a str,
}

/// The part of the configuration this endpoint may change: status only on `/status`, all but
/// status on the main resource of a kind with a status subresource.
fn scoped(config: &Value, req: &ApplyRequest) -> Value {
    let mut out = config.clone();
    if let Some(root) = out.as_object_mut() {
        if req.subresource == Some("status") {
            root.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status"));
            if let Some(Value::Object(meta)) = root.get_mut("metadata") {
                meta.retain(|k, _| matches!(k.as_str(), "name" | "namespace" | "resourceVersion"));
            }
        } else if req.info.has_status {
            root.remove("status");
        }
        if let Some(Value::Object(meta)) = root.get_mut("metadata") {
            meta.remove("managedFields");
        }
    }
    out
}

/// Applies `config` for `req.manager` over `current` (None: the object is being created).
pub fn apply(
    current: Option<&Value>,
    config: &Value,
    req: &ApplyRequest,
) -> Result<Value, ApiError> {
    let config = scoped(config, req);
    let applied: FieldSet = fieldset::tracked_paths(&config);
    let base = current
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let old_entries = fieldset::read_entries(&base);
    let mut entries = old_entries.clone();
    let is_mine = |e: &ManagedEntry| e.same_owner(req.manager, "Apply", req.subresource);

    let mut conflicts: Vec<(usize, Vec<String>)> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        if is_mine(entry) {
            continue;
        }
        for owned in &entry.fields {
            for path in applied.iter().filter(|p| overlaps(p, owned)) {
                let deeper = if owned.len() > path.len() {
                    owned
                } else {
                    path
                };
                if get_path(&config, deeper) != get_path(&base, deeper) {
                    conflicts.push((index, owned.clone()));
                }
            }
        }
    }
    if !conflicts.is_empty() && !req.force {
        let rendered: Vec<(String, String)> = conflicts
            .iter()
            .map(|(index, path)| {
                let entry = &entries[*index];
                let manager = if entry.operation == "Apply" {
                    format!("{:?}", entry.manager)
                } else {
                    format!("{:?} using {}", entry.manager, entry.api_version)
                };
                (manager, format!(".{}", path.join(".")))
            })
            .collect();
        return Err(ApiError::conflict_apply(&rendered));
    }
    for (index, path) in &conflicts {
        entries[*index].fields.remove(path);
    }

    let mut object = base.clone();
    let previously_applied: FieldSet = entries
        .iter()
        .find(|e| is_mine(e))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    for path in previously_applied.difference(&applied) {
        let owned_by_others = entries
            .iter()
            .any(|e| !is_mine(e) && e.fields.iter().any(|p| overlaps(p, path)));
        if !owned_by_others {
            fieldset::remove_path(&mut object, path);
        }
    }
    deep_merge(&mut object, &config);

    match entries.iter_mut().find(|e| is_mine(e)) {
        Some(entry) => entry.fields = applied,
        None => entries.push(ManagedEntry {
            manager: req.manager.to_string(),
            operation: "Apply".into(),
            api_version: req.info.api_version(),
            time: None,
            subresource: req.subresource.map(str::to_string),
            fields: applied,
        }),
    }
    let ownership_changed = entries
        .iter()
        .map(|e| (&e.manager, &e.operation, &e.fields))
        .ne(old_entries
            .iter()
            .map(|e| (&e.manager, &e.operation, &e.fields)));
    if ownership_changed {
        for entry in entries.iter_mut().filter(|e| is_mine(e)) {
            entry.time = Some(req.now.to_string());
        }
        fieldset::write_entries(&mut object, &entries);
    }
    Ok(object)
}

/// Maps merge recursively; lists and scalars replace.
fn deep_merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (key, value) in p {
                match t.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => {
                        deep_merge(existing, value)
                    }
                    _ => {
                        t.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources;
    use serde_json::json;

    fn req<'a>(manager: &'a str, force: bool) -> ApplyRequest<'a> {
        ApplyRequest {
            info: resources::by_plural("coordination.k8s.io", "leases")
                .unwrap()
                .info(),
            manager,
            force,
            subresource: None,
            now: "2024-01-01T00:00:00Z",
        }
    }

    #[test]
    fn conflict_unless_forced_then_ownership_moves() {
        let a = apply(
            None,
            &json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 5}}),
            &req("a", false),
        )
        .unwrap();
        let err = apply(
            Some(&a),
            &json!({"spec": {"holderIdentity": "b"}}),
            &req("b", false),
        )
        .unwrap_err();
        assert_eq!(err.code, 409);
        assert_eq!(err.causes()[0].reason, "FieldManagerConflict");
        assert_eq!(
            err.causes()[0].field.as_deref(),
            Some(".spec.holderIdentity")
        );
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"a\": .spec.holderIdentity"
        );
        // Same value: shared ownership, no conflict.
        assert!(
            apply(
                Some(&a),
                &json!({"spec": {"leaseDurationSeconds": 5}}),
                &req("b", false)
            )
            .is_ok()
        );
        let forced = apply(
            Some(&a),
            &json!({"spec": {"holderIdentity": "b"}}),
            &req("b", true),
        )
        .unwrap();
        assert_eq!(forced["spec"]["holderIdentity"], "b");
        let entries = fieldset::read_entries(&forced);
        assert!(
            !entries[0]
                .fields
                .iter()
                .any(|p| p.last().unwrap() == "holderIdentity")
        );
    }

    #[test]
    fn fields_no_longer_applied_are_removed_and_reapply_is_stable() {
        let first = apply(
            None,
            &json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 5}}),
            &req("a", false),
        )
        .unwrap();
        let second = apply(
            Some(&first),
            &json!({"spec": {"holderIdentity": "a"}}),
            &req("a", false),
        )
        .unwrap();
        assert!(second["spec"].get("leaseDurationSeconds").is_none());
        let again = apply(
            Some(&second),
            &json!({"spec": {"holderIdentity": "a"}}),
            &req("a", false),
        )
        .unwrap();
        assert_eq!(again, second);
    }
}
