//! Strategic merge patch for the built-in kinds served here.
//!
//! Maps merge (null deletes); a list merges only where the Go type declares a patch strategy
//! (table below), every other list is replaced. Supported directives: `$patch: replace|delete`
//! in maps and list items, `$deleteFromPrimitiveList/<field>`; `$setElementOrder/<field>` and
//! `$retainKeys` are accepted and ignored.

use serde_json::{Map, Value};

use crate::errors::ApiError;

#[derive(Debug, Clone, Copy, PartialEq)]
enum ListStrategy {
    Replace,
    /// A list of scalars merged as a set, ordered like keyed lists (see `enforce_order`;
    /// observed on v1.20: `["e"]` onto `["c","d"]` gives `["e","c","d"]`).
    MergeScalars,
    MergeByKey(&'static str),
}

/// Lists with a patch strategy, by field path (`[]` stands for any list index).
fn list_strategy(kind: &str, path: &str) -> ListStrategy {
    use ListStrategy::*;
    match path {
        "metadata.finalizers" => MergeScalars,
        "metadata.ownerReferences" => MergeByKey("uid"),
        _ => match (kind, path) {
            (
                "Pod",
                "spec.containers"
                | "spec.initContainers"
                | "spec.ephemeralContainers"
                | "spec.volumes"
                | "spec.imagePullSecrets"
                | "spec.resourceClaims"
                | "spec.containers[].env"
                | "spec.initContainers[].env"
                | "status.resourceClaimStatuses",
            ) => MergeByKey("name"),
            ("Pod", "spec.containers[].ports" | "spec.initContainers[].ports") => {
                MergeByKey("containerPort")
            }
            ("Pod", "spec.containers[].volumeMounts" | "spec.initContainers[].volumeMounts") => {
                MergeByKey("mountPath")
            }
            ("Pod" | "PersistentVolumeClaim" | "Namespace", "status.conditions") => {
                MergeByKey("type")
            }
            ("Pod", "status.podIPs") => MergeByKey("ip"),
            ("ResourceClaim", "status.reservedFor") => MergeByKey("uid"),
            _ => Replace,
        },
    }
}

pub fn apply(kind: &str, current: &Value, patch: &Value) -> Result<Value, ApiError> {
    let patch = patch
        .as_object()
        .ok_or_else(|| ApiError::bad_request("a strategic merge patch must be a JSON object"))?;
    let mut doc = current.clone();
    let target = doc
        .as_object_mut()
        .ok_or_else(|| ApiError::internal("stored object is not a JSON object"))?;
    merge_map(kind, "", target, patch)?;
    Ok(doc)
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn merge_map(
    kind: &str,
    path: &str,
    target: &mut Map<String, Value>,
    patch: &Map<String, Value>,
) -> Result<(), ApiError> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *target = strip_directives(patch);
            return Ok(());
        }
        Some("delete") => {
            target.clear();
            return Ok(());
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "unknown patch type: {other}"
            )));
        }
        None => {}
    }
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            let remove = value.as_array().cloned().unwrap_or_default();
            if let Some(Value::Array(list)) = target.get_mut(field) {
                list.retain(|item| !remove.contains(item));
            }
            continue;
        }
        if key.starts_with('$') {
            continue;
        }
        let path = child_path(path, key);
        match value {
            Value::Null => {
                target.remove(key);
            }
            Value::Object(patch_map) => match target.get_mut(key) {
                Some(Value::Object(existing)) => merge_map(kind, &path, existing, patch_map)?,
                _ => {
                    let mut fresh = Map::new();
                    merge_map(kind, &path, &mut fresh, patch_map)?;
                    target.insert(key.clone(), Value::Object(fresh));
                }
            },
            Value::Array(items) => {
                let merged = match (list_strategy(kind, &path), target.get(key)) {
                    (ListStrategy::MergeScalars, Some(Value::Array(existing))) => {
                        merge_scalars(existing, items)
                    }
                    (ListStrategy::MergeByKey(merge_key), Some(Value::Array(existing))) => {
                        merge_by_key(kind, &path, merge_key, existing, items)?
                    }
                    _ => items
                        .iter()
                        .filter(|i| !is_delete_directive(i))
                        .map(strip_value)
                        .collect(),
                };
                target.insert(key.clone(), Value::Array(merged));
            }
            scalar => {
                target.insert(key.clone(), scalar.clone());
            }
        }
    }
    Ok(())
}

fn merge_scalars(existing: &[Value], patch: &[Value]) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::new();
    for item in existing.iter().chain(patch) {
        if !merged.contains(item) {
            merged.push(item.clone());
        }
    }
    enforce_order(merged, patch, existing, |item| Some(item.clone()))
}

/// Orders a merged list like the Go implementation (`normalizeElementOrder`): entries named by
/// the patch come in patch order, the server-only entries keep the live order, and the two are
/// interleaved by the live order where both entries exist, so a new entry lands right after
/// the patch entry before it (or first). `key` identifies an entry across the three lists.
fn enforce_order(
    merged: Vec<Value>,
    patch: &[Value],
    live: &[Value],
    key: impl Fn(&Value) -> Option<Value>,
) -> Vec<Value> {
    let position_in = |list: &[Value], item: &Value| {
        let wanted = key(item)?;
        list.iter()
            .position(|other| key(other).as_ref() == Some(&wanted))
    };
    let (mut from_patch, server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|item| position_in(patch, item).is_some());
    from_patch.sort_by_key(|item| position_in(patch, item));

    let mut out = Vec::with_capacity(from_patch.len() + server_only.len());
    let mut server_only = server_only.into_iter().peekable();
    let mut from_patch = from_patch.into_iter().peekable();
    loop {
        let take_server_entry = match (server_only.peek(), from_patch.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(server), Some(patched)) => {
                match (position_in(live, server), position_in(live, patched)) {
                    (Some(s), Some(p)) => s < p,
                    _ => false,
                }
            }
        };
        let next = if take_server_entry {
            server_only.next()
        } else {
            from_patch.next()
        };
        out.extend(next);
    }
    out
}

fn is_delete_directive(item: &Value) -> bool {
    item.get("$patch").and_then(Value::as_str) == Some("delete")
}

fn merge_by_key(
    kind: &str,
    path: &str,
    merge_key: &str,
    existing: &[Value],
    patch: &[Value],
) -> Result<Vec<Value>, ApiError> {
    let mut out: Vec<Value> = existing.to_vec();
    let item_path = format!("{path}[]");
    for item in patch {
        let Some(key_value) = item.get(merge_key) else {
            return Err(ApiError::bad_request(format!(
                "map: {item} does not contain declared merge key: {merge_key}"
            )));
        };
        let position = out.iter().position(|e| e.get(merge_key) == Some(key_value));
        if is_delete_directive(item) {
            if let Some(i) = position {
                out.remove(i);
            }
            continue;
        }
        match (position, item.as_object()) {
            (Some(i), Some(patch_map)) => {
                if let Some(existing_map) = out[i].as_object_mut() {
                    merge_map(kind, &item_path, existing_map, patch_map)?;
                }
            }
            _ => out.push(strip_value(item)),
        }
    }
    let live: Vec<Value> = existing
        .iter()
        .filter(|e| {
            !patch
                .iter()
                .any(|p| is_delete_directive(p) && p.get(merge_key) == e.get(merge_key))
        })
        .cloned()
        .collect();
    let patch_entries: Vec<Value> = patch
        .iter()
        .filter(|p| !is_delete_directive(p))
        .cloned()
        .collect();
    Ok(enforce_order(out, &patch_entries, &live, |item| {
        item.get(merge_key).cloned()
    }))
}

fn strip_directives(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .filter(|(k, _)| !k.starts_with('$'))
        .map(|(k, v)| (k.clone(), strip_value(v)))
        .collect()
}

fn strip_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(strip_directives(map)),
        Value::Array(items) => Value::Array(items.iter().map(strip_value).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finalizers_merge_patch_items_first() {
        let doc = json!({"metadata": {"finalizers": ["c", "d"]}});
        let out = apply(
            "ConfigMap",
            &doc,
            &json!({"metadata": {"finalizers": ["e"]}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["e", "c", "d"]));
    }

    #[test]
    fn delete_from_primitive_list() {
        let doc = json!({"metadata": {"finalizers": ["c", "d"]}});
        let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["c"]}});
        let out = apply("PersistentVolumeClaim", &doc, &patch).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["d"]));
    }

    #[test]
    fn conditions_merge_by_type_and_unknown_lists_replace() {
        let doc = json!({"status": {
            "conditions": [{"type": "Ready", "status": "False"}, {"type": "Scheduled", "status": "True"}],
            "containerStatuses": [{"name": "a"}, {"name": "b"}]
        }});
        let patch = json!({"status": {
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "New", "status": "True"}],
            "containerStatuses": [{"name": "c"}]
        }});
        let out = apply("Pod", &doc, &patch).unwrap();
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "Ready", "status": "True"}, {"type": "New", "status": "True"}, {"type": "Scheduled", "status": "True"}])
        );
        assert_eq!(out["status"]["containerStatuses"], json!([{"name": "c"}]));
    }

    #[test]
    fn owner_references_merge_by_uid_and_delete_directive() {
        let doc = json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}});
        let patch = json!({"metadata": {"ownerReferences": [{"uid": "1", "$patch": "delete"}, {"uid": "3", "name": "c"}]}});
        let out = apply("Pod", &doc, &patch).unwrap();
        assert_eq!(
            out["metadata"]["ownerReferences"],
            json!([{"uid": "3", "name": "c"}, {"uid": "2", "name": "b"}])
        );
    }

    #[test]
    fn new_owner_reference_goes_first_when_no_patch_entry_precedes_it() {
        let doc = json!({"metadata": {"ownerReferences": [{"uid": "a"}]}});
        let patch = json!({"metadata": {"ownerReferences": [{"uid": "b"}]}});
        let out = apply("ConfigMap", &doc, &patch).unwrap();
        assert_eq!(
            out["metadata"]["ownerReferences"],
            json!([{"uid": "b"}, {"uid": "a"}])
        );
    }

    #[test]
    fn new_finalizer_lands_after_the_patch_entry_before_it() {
        let doc = json!({"metadata": {"finalizers": ["c", "d", "e"]}});
        let patch = json!({"metadata": {"finalizers": ["d", "new"]}});
        let out = apply("ConfigMap", &doc, &patch).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["c", "d", "new", "e"]));
    }

    #[test]
    fn new_condition_before_an_existing_one_keeps_patch_order() {
        let doc = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let patch = json!({"status": {"conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "True"}
        ]}});
        let out = apply("Pod", &doc, &patch).unwrap();
        let types: Vec<&str> = out["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["PodScheduled", "Ready"]);
    }

    #[test]
    fn lease_release_nulls_remove_fields() {
        let doc = json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 5, "leaseTransitions": 2}});
        let patch = json!({"spec": {"holderIdentity": null, "leaseDurationSeconds": null}});
        let out = apply("Lease", &doc, &patch).unwrap();
        assert_eq!(out, json!({"spec": {"leaseTransitions": 2}}));
    }
}
