//! `meta.k8s.io/v1` Table responses for custom resources, as `kubectl get` asks for them
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`): the Name column, then the
//! version's `additionalPrinterColumns` (upstream's CRD `tableconvertor`).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition;
use serde_json::{Value, json};

use crate::meta;

/// `ObjectMeta.name`'s description, which upstream puts on the Name column.
pub const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: http://kubernetes.io/docs/user-guide/identifiers#names";

/// `ObjectMeta.creationTimestamp`'s description, on the default Age column.
pub const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// Which Table version the Accept header asks for (None: not a Table request).
pub fn requested_version(accept: &str) -> Option<&'static str> {
    let wants = |version: &str| {
        accept.split(',').any(|media| {
            let params: Vec<&str> = media.split(';').map(str::trim).collect();
            params.contains(&"as=Table")
                && params.contains(&"g=meta.k8s.io")
                && params.contains(&format!("v={version}").as_str())
        })
    };
    if wants("v1") {
        Some("v1")
    } else if wants("v1beta1") {
        Some("v1beta1")
    } else {
        None
    }
}

/// How much of each object a row carries (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(value: Option<&str>) -> Result<Self, String> {
        match value.unwrap_or("") {
            "" | "PartialObjectMetadata" => Ok(IncludeObject::Metadata),
            "None" => Ok(IncludeObject::None),
            "Object" => Ok(IncludeObject::Object),
            other => Err(format!(
                "unrecognized includeObject value: {other:?}; supported values: \"None\", \"PartialObjectMetadata\", \"Object\""
            )),
        }
    }
}

/// Renders a list (or a single object) as a Table.
pub fn render(
    body: &Value,
    columns: &[CustomResourceColumnDefinition],
    version: &str,
    include: IncludeObject,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    let mut definitions = vec![json!({
        "name": "Name", "type": "string", "format": "name",
        "description": NAME_DESCRIPTION, "priority": 0
    })];
    for column in columns {
        let description = column.description.clone().unwrap_or_else(|| {
            format!(
                "Custom resource definition column (in JSONPath format): {}",
                column.json_path
            )
        });
        definitions.push(json!({
            "name": column.name, "type": column.type_,
            "format": column.format.clone().unwrap_or_default(),
            "description": description, "priority": column.priority.unwrap_or(0),
        }));
    }
    let (items, mut metadata) = match body.get("items").and_then(Value::as_array) {
        Some(items) => (items.clone(), body["metadata"].clone()),
        None => (
            vec![body.clone()],
            json!({"resourceVersion": meta::resource_version(body).unwrap_or("")}),
        ),
    };
    if let Some(map) = metadata.as_object_mut() {
        map.retain(|k, _| {
            matches!(
                k.as_str(),
                "resourceVersion" | "continue" | "remainingItemCount"
            )
        });
    }
    let rows: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut cells = vec![json!(meta::name(item))];
            cells.extend(columns.iter().map(|c| cell(item, c, now)));
            let mut row = json!({"cells": cells});
            match include {
                IncludeObject::None => {}
                IncludeObject::Object => row["object"] = item.clone(),
                IncludeObject::Metadata => {
                    row["object"] = json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": format!("meta.k8s.io/{version}"),
                        "metadata": item["metadata"],
                    })
                }
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

/// The value at a simple JSONPath (`.a.b`, `.a[0].b`), as upstream's columns allow.
fn lookup<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut current = obj;
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let (field, indexes) = match segment.find('[') {
            Some(at) => (&segment[..at], &segment[at..]),
            None => (segment, ""),
        };
        if !field.is_empty() {
            current = current.get(field)?;
        }
        for index in indexes.split(['[', ']']).filter(|s| !s.is_empty()) {
            current = current.get(index.parse::<usize>().ok()?)?;
        }
    }
    Some(current)
}

/// Upstream `cellForJSONValue`: the value in the column's type, or null.
fn cell(
    obj: &Value,
    column: &CustomResourceColumnDefinition,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    let Some(value) = lookup(obj, &column.json_path).filter(|v| !v.is_null()) else {
        return Value::Null;
    };
    match (column.type_.as_str(), value) {
        ("string", Value::String(s)) => json!(s),
        ("string", other) => json!(other.to_string()),
        ("integer", Value::Number(n)) => n
            .as_i64()
            .map(Value::from)
            .or_else(|| n.as_f64().map(|f| json!(f as i64)))
            .unwrap_or(Value::Null),
        ("number", Value::Number(n)) => n.as_f64().map(Value::from).unwrap_or(Value::Null),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(text)) => match meta::parse_time(text) {
            Some(at) => json!(human_duration(now - at)),
            None => json!("<invalid>"),
        },
        _ => Value::Null,
    }
}

/// Upstream `duration.HumanDuration`, as kubectl shows ages.
pub fn human_duration(d: chrono::Duration) -> String {
    let seconds = d.num_seconds();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, type_: &str, path: &str) -> CustomResourceColumnDefinition {
        CustomResourceColumnDefinition {
            name: name.into(),
            type_: type_.into(),
            json_path: path.into(),
            ..Default::default()
        }
    }

    #[test]
    fn kubectl_accept_headers_ask_for_v1_tables() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(requested_version(kubectl), Some("v1"));
        assert_eq!(requested_version("application/json"), None);
    }

    #[test]
    fn rows_hold_the_name_then_each_column_in_its_type() {
        let now = chrono::Utc::now();
        let created = meta::format_time(now - chrono::Duration::seconds(3 * 3600 + 5 * 60));
        let list = json!({"metadata": {"resourceVersion": "7"}, "items": [{
            "metadata": {"name": "m", "creationTimestamp": created},
            "spec": {"world": "w", "list": [{"n": 3}]},
            "status": {"shadow": {"agreed": 12}}
        }]});
        let columns = [
            column("World", "string", ".spec.world"),
            column("Agreed", "integer", ".status.shadow.agreed"),
            column("Phase", "string", ".status.phase"),
            column("First", "integer", ".spec.list[0].n"),
            column("Age", "date", ".metadata.creationTimestamp"),
        ];
        let table = render(&list, &columns, "v1", IncludeObject::Metadata, now);
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["metadata"]["resourceVersion"], "7");
        assert_eq!(
            table["columnDefinitions"][1]["description"],
            "Custom resource definition column (in JSONPath format): .spec.world"
        );
        assert_eq!(
            table["rows"][0]["cells"],
            json!(["m", "w", 12, null, 3, "3h5m"])
        );
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    }

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        let d = chrono::Duration::seconds;
        assert_eq!(human_duration(d(59)), "59s");
        assert_eq!(human_duration(d(150)), "2m30s");
        assert_eq!(human_duration(d(3600 * 30)), "30h");
        assert_eq!(human_duration(d(3600 * 24 * 3 + 3600)), "3d1h");
    }
}
