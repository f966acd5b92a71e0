//! The `/scale` subresource of the kinds with replicas (`kubectl scale`, autoscalers): an
//! autoscaling/v1 `Scale` view of `spec.replicas`, written back to the object as an update
//! of the main resource with the Scale's resourceVersion as its precondition.

use serde_json::{Value, json};

use crate::errors::{ApiError, Cause};
use crate::meta;
use crate::resources::ResourceInfo;

/// The Scale of `obj`.
pub fn of(obj: &Value) -> Value {
    let mut metadata = serde_json::Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = meta::metadata(obj).and_then(|m| m.get(field)) {
            metadata.insert(field.into(), value.clone());
        }
    }
    let mut spec = json!({});
    if let Some(replicas) = replicas(obj.pointer("/spec/replicas")).filter(|r| *r != 0) {
        spec["replicas"] = json!(replicas);
    }
    let mut status = json!({"replicas": replicas(obj.pointer("/status/replicas")).unwrap_or(0)});
    let selector = selector(obj.pointer("/spec/selector"));
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

/// The object `current` becomes under `scale`: its replicas, and the Scale's resourceVersion
/// (when it has one) as the update's precondition.
pub fn apply(info: &ResourceInfo, current: &Value, scale: &Value) -> Result<Value, ApiError> {
    let name = meta::name(current);
    let wanted = scale.pointer("/spec/replicas").unwrap_or(&json!(0)).clone();
    let Some(count) = replicas(Some(&wanted)).filter(|r| *r >= 0) else {
        return Err(ApiError::invalid_kind(
            "Scale",
            "autoscaling",
            name,
            vec![Cause::new(
                "FieldValueInvalid",
                format!("Invalid value: {wanted}: must be greater than or equal to 0"),
                Some("spec.replicas"),
            )],
        ));
    };
    let mut new = current.clone();
    match new.get_mut("spec").and_then(Value::as_object_mut) {
        Some(spec) => {
            spec.insert("replicas".into(), json!(count));
        }
        None => {
            return Err(ApiError::invalid(
                info,
                name,
                vec![Cause::new(
                    "FieldValueRequired",
                    "Required value",
                    Some("spec"),
                )],
            ));
        }
    }
    if let Some(rv) = meta::resource_version(scale).filter(|rv| !rv.is_empty()) {
        meta::metadata_mut(&mut new).insert("resourceVersion".into(), json!(rv));
    }
    Ok(new)
}

fn replicas(value: Option<&Value>) -> Option<i64> {
    value.and_then(Value::as_i64)
}

/// A label selector as upstream's `Selector.String()` writes it: requirements sorted by key;
/// ReplicationControllers select by a plain map.
fn selector(value: Option<&Value>) -> String {
    let Some(Value::Object(map)) = value else {
        return String::new();
    };
    let plain = |labels: &serde_json::Map<String, Value>| -> Vec<(String, String)> {
        labels
            .iter()
            .map(|(k, v)| (k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())))
            .collect()
    };
    let mut requirements =
        if map.contains_key("matchLabels") || map.contains_key("matchExpressions") {
            let mut out = match map.get("matchLabels") {
                Some(Value::Object(labels)) => plain(labels),
                _ => Vec::new(),
            };
            for expression in map
                .get("matchExpressions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let key = expression["key"].as_str().unwrap_or_default().to_string();
                let mut values: Vec<&str> = expression["values"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                values.sort_unstable();
                let text = match expression["operator"].as_str().unwrap_or_default() {
                    "In" => format!("{key} in ({})", values.join(",")),
                    "NotIn" => format!("{key} notin ({})", values.join(",")),
                    "Exists" => key.clone(),
                    _ => format!("!{key}"),
                };
                out.push((key, text));
            }
            out
        } else {
            plain(map)
        };
    requirements.sort();
    requirements
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources;

    #[test]
    fn scale_views_and_writes_replicas() {
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "n", "resourceVersion": "5", "labels": {"x": "y"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"b": "2", "a": "1"},
                "matchExpressions": [{"key": "c", "operator": "In", "values": ["z", "y"]}]}},
            "status": {"replicas": 1}
        });
        let scale = of(&deployment);
        assert_eq!(scale["spec"]["replicas"], 2);
        assert_eq!(
            scale["status"],
            json!({"replicas": 1, "selector": "a=1,b=2,c in (y,z)"})
        );
        assert_eq!(
            scale["metadata"],
            json!({"name": "d", "namespace": "n", "resourceVersion": "5"})
        );

        let info = resources::by_plural("apps", "deployments").unwrap().info();
        let written = apply(
            info,
            &deployment,
            &json!({"spec": {"replicas": 4}, "metadata": {"resourceVersion": "4"}}),
        )
        .unwrap();
        assert_eq!(written["spec"]["replicas"], 4);
        assert_eq!(written["metadata"]["resourceVersion"], "4");
        assert_eq!(written["metadata"]["labels"]["x"], "y");
        let err = apply(info, &deployment, &json!({"spec": {"replicas": -1}})).unwrap_err();
        assert_eq!(err.code, 422);
        let rc = json!({"spec": {"selector": {"app": "a"}}});
        assert_eq!(
            of(&rc)["status"],
            json!({"replicas": 0, "selector": "app=a"})
        );
    }
}
