//! Field ownership for server-side apply: sets of leaf paths and the `managedFields` entries
//! they are stored in.
//!
//! Granularity: maps are followed down to their leaves; lists and scalars are atomic leaves
//! (upstream tracks associative list items separately; treating a list as one field is enough
//! for pod status and Leases). Tracked metadata: labels, annotations, finalizers, ownerReferences.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

pub type FieldPath = Vec<String>;
pub type FieldSet = BTreeSet<FieldPath>;

const TRACKED_METADATA: &[&str] = &["labels", "annotations", "finalizers", "ownerReferences"];

/// Leaf paths of the fields an object (or an apply configuration) sets.
pub fn tracked_paths(obj: &Value) -> FieldSet {
    let mut set = FieldSet::new();
    let Some(root) = obj.as_object() else {
        return set;
    };
    for (key, value) in root {
        match key.as_str() {
            "apiVersion" | "kind" => {}
            "metadata" => {
                if let Some(meta) = value.as_object() {
                    for field in TRACKED_METADATA {
                        if let Some(v) = meta.get(*field) {
                            collect(
                                v,
                                vec!["metadata".into(), field.to_string()],
                                &mut set,
                                *field != "finalizers" && *field != "ownerReferences",
                            );
                        }
                    }
                }
            }
            _ => collect(value, vec![key.clone()], &mut set, true),
        }
    }
    set
}

fn collect(value: &Value, path: FieldPath, set: &mut FieldSet, descend: bool) {
    match value {
        Value::Object(map) if descend && !map.is_empty() => {
            for (k, v) in map {
                let mut child = path.clone();
                child.push(k.clone());
                collect(v, child, set, true);
            }
        }
        _ => {
            set.insert(path);
        }
    }
}

pub fn get_path<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |v, k| v.get(k))
}

/// Removes the field at `path`, then the maps it leaves empty (below the top level).
pub fn remove_path(obj: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    if let Some(Value::Object(parent)) = parents.iter().try_fold(&mut *obj, |v, k| v.get_mut(k)) {
        parent.remove(last);
    }
    if parents.len() > 1
        && get_path(obj, parents).is_some_and(|v| v.as_object().is_some_and(Map::is_empty))
    {
        remove_path(obj, parents);
    }
}

/// One path is the other or contains it.
pub fn overlaps(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// `fieldsV1` tree (`{"f:spec": {"f:holderIdentity": {}}}`).
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut node = &mut root;
        for key in path {
            node = node
                .entry(format!("f:{key}"))
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("fieldsV1 nodes are maps");
        }
    }
    Value::Object(root)
}

pub fn from_fields_v1(tree: &Value) -> FieldSet {
    let mut set = FieldSet::new();
    walk_fields(tree, Vec::new(), &mut set);
    set
}

fn walk_fields(node: &Value, path: FieldPath, set: &mut FieldSet) {
    let children: Vec<(&String, &Value)> = node
        .as_object()
        .map(|m| m.iter().filter(|(k, _)| k.as_str() != ".").collect())
        .unwrap_or_default();
    if children.is_empty() {
        if !path.is_empty() {
            set.insert(path);
        }
        return;
    }
    for (key, child) in children {
        let mut next = path.clone();
        next.push(key.strip_prefix("f:").unwrap_or(key).to_string());
        walk_fields(child, next, set);
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedEntry {
    pub manager: String,
    /// "Apply" or "Update".
    pub operation: String,
    pub api_version: String,
    pub time: Option<String>,
    pub subresource: Option<String>,
    pub fields: FieldSet,
}

impl ManagedEntry {
    pub fn same_owner(&self, manager: &str, operation: &str, subresource: Option<&str>) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == subresource
    }
}

pub fn read_entries(obj: &Value) -> Vec<ManagedEntry> {
    let Some(list) =
        get_path(obj, &["metadata".into(), "managedFields".into()]).and_then(Value::as_array)
    else {
        return Vec::new();
    };
    list.iter()
        .map(|e| ManagedEntry {
            manager: e["manager"].as_str().unwrap_or("").to_string(),
            operation: e["operation"].as_str().unwrap_or("Update").to_string(),
            api_version: e["apiVersion"].as_str().unwrap_or("").to_string(),
            time: e["time"].as_str().map(str::to_string),
            subresource: e["subresource"].as_str().map(str::to_string),
            fields: from_fields_v1(&e["fieldsV1"]),
        })
        .collect()
}

/// Stores the entries (without empty ones) into the object's metadata.
pub fn write_entries(obj: &mut Value, entries: &[ManagedEntry]) {
    let rendered: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut entry = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "fieldsType": "FieldsV1",
                "fieldsV1": to_fields_v1(&e.fields),
            });
            if let Some(time) = &e.time {
                entry["time"] = json!(time);
            }
            if let Some(sub) = &e.subresource {
                entry["subresource"] = json!(sub);
            }
            entry
        })
        .collect();
    let meta = crate::meta::metadata_mut(obj);
    if rendered.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(rendered));
    }
}

/// Ownership after a non-apply write: `manager` takes every field the write changed, other
/// managers lose them (updates never conflict).
pub fn record_update(
    old: &Value,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
    api_version: &str,
    now: &str,
) {
    let before = tracked_paths(old);
    let after = tracked_paths(new);
    let changed: FieldSet = after
        .iter()
        .filter(|p| get_path(old, p) != get_path(new, p))
        .cloned()
        .collect();
    let removed: FieldSet = before.difference(&after).cloned().collect();
    let mut entries = read_entries(old);
    for entry in &mut entries {
        entry
            .fields
            .retain(|p| !changed.iter().chain(&removed).any(|c| overlaps(p, c)));
    }
    if !changed.is_empty() {
        match entries
            .iter_mut()
            .find(|e| e.same_owner(manager, "Update", subresource))
        {
            Some(entry) => {
                entry.fields.extend(changed);
                entry.time = Some(now.to_string());
            }
            None => entries.push(ManagedEntry {
                manager: manager.to_string(),
                operation: "Update".into(),
                api_version: api_version.to_string(),
                time: Some(now.to_string()),
                subresource: subresource.map(str::to_string),
                fields: changed,
            }),
        }
    }
    write_entries(new, &entries);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> FieldPath {
        p.split('.').map(str::to_string).collect()
    }

    #[test]
    fn paths_round_trip_through_fields_v1() {
        let obj = json!({"apiVersion": "v1", "metadata": {"name": "x", "labels": {"a": "1"}, "finalizers": ["f"]},
                         "spec": {"holderIdentity": "h", "nested": {"x": [1]}}});
        let set = tracked_paths(&obj);
        assert!(set.contains(&path("metadata.labels.a")));
        assert!(set.contains(&path("metadata.finalizers")));
        assert!(set.contains(&path("spec.nested.x")));
        assert!(!set.iter().any(|p| p == &path("metadata.name")));
        assert_eq!(from_fields_v1(&to_fields_v1(&set)), set);
    }

    #[test]
    fn update_takes_changed_fields_from_other_managers() {
        let mut old = json!({"spec": {"a": 1, "b": 2}});
        write_entries(
            &mut old,
            &[ManagedEntry {
                manager: "x".into(),
                operation: "Apply".into(),
                api_version: "v1".into(),
                time: None,
                subresource: None,
                fields: [path("spec.a"), path("spec.b")].into_iter().collect(),
            }],
        );
        let mut new = old.clone();
        new["spec"]["a"] = json!(5);
        record_update(&old, &mut new, "y", None, "v1", "t");
        let entries = read_entries(&new);
        assert_eq!(entries[0].fields, [path("spec.b")].into_iter().collect());
        assert_eq!(entries[1].manager, "y");
        assert_eq!(entries[1].fields, [path("spec.a")].into_iter().collect());
    }

    #[test]
    fn remove_path_prunes_empty_parents() {
        let mut obj = json!({"spec": {"a": {"b": 1}, "c": 2}});
        remove_path(&mut obj, &path("spec.a.b"));
        assert_eq!(obj, json!({"spec": {"c": 2}}));
    }
}
