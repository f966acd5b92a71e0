//! Accessors for `metadata` of objects stored as JSON.

use serde_json::{Map, Value, json};

pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// The metadata map, created when missing.
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    let root = obj.as_object_mut().expect("objects are JSON objects");
    let meta = root.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    meta.as_object_mut()
        .expect("metadata was just made an object")
}

pub fn str_field<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    metadata(obj)?.get(field)?.as_str()
}

pub fn name(obj: &Value) -> &str {
    str_field(obj, "name").unwrap_or("")
}

pub fn namespace(obj: &Value) -> &str {
    str_field(obj, "namespace").unwrap_or("")
}

pub fn uid(obj: &Value) -> &str {
    str_field(obj, "uid").unwrap_or("")
}

pub fn resource_version(obj: &Value) -> Option<&str> {
    str_field(obj, "resourceVersion").filter(|rv| !rv.is_empty())
}

pub fn set_resource_version(obj: &mut Value, rv: u64) {
    metadata_mut(obj).insert("resourceVersion".into(), json!(rv.to_string()));
}

pub fn deletion_timestamp(obj: &Value) -> Option<&str> {
    str_field(obj, "deletionTimestamp")
}

pub fn is_deleting(obj: &Value) -> bool {
    deletion_timestamp(obj).is_some()
}

pub fn deletion_grace_period(obj: &Value) -> Option<i64> {
    metadata(obj)?.get("deletionGracePeriodSeconds")?.as_i64()
}

pub fn generation(obj: &Value) -> Option<i64> {
    metadata(obj)?.get("generation")?.as_i64()
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    metadata(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Sets the finalizer list; an empty list removes the field, as the server stores it.
pub fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    let meta = metadata_mut(obj);
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), json!(finalizers));
    }
}

pub fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    metadata(obj)?.get("labels")?.as_object()
}

pub fn owner_references(obj: &Value) -> &[Value] {
    metadata(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Copies `field` of `from`'s metadata into `to`'s metadata (or removes it when absent).
pub fn copy_field(from: &Value, to: &mut Value, field: &str) {
    let value = metadata(from).and_then(|m| m.get(field)).cloned();
    let meta = metadata_mut(to);
    match value {
        Some(v) => {
            meta.insert(field.to_string(), v);
        }
        None => {
            meta.remove(field);
        }
    }
}

/// Copies a top-level field (`spec`, `status`) of `from` into `to`, or removes it.
pub fn copy_top_level(from: &Value, to: &mut Value, field: &str) {
    let value = from.get(field).cloned();
    let root = to.as_object_mut().expect("objects are JSON objects");
    match value {
        Some(v) => {
            root.insert(field.to_string(), v);
        }
        None => {
            root.remove(field);
        }
    }
}

/// RFC 3339 with second precision, as `metav1.Time` serialises.
pub fn format_time(time: chrono::DateTime<chrono::Utc>) -> String {
    time.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub fn parse_time(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_finalizer_list_removes_the_field() {
        let mut obj = json!({"metadata": {"finalizers": ["a"]}});
        set_finalizers(&mut obj, &[]);
        assert!(metadata(&obj).unwrap().get("finalizers").is_none());
        set_finalizers(&mut obj, &["b".to_string()]);
        assert_eq!(finalizers(&obj), vec!["b"]);
    }

    #[test]
    fn time_round_trips() {
        let t = parse_time("2024-05-01T10:00:00Z").unwrap();
        assert_eq!(format_time(t), "2024-05-01T10:00:00Z");
    }
}
