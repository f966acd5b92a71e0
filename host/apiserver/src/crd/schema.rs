//! Structural schemas of custom resources: defaults, pruning and validation, with the
//! messages of v1.20's `ValidateCustomResource` (go-openapi's texts wrapped in `field.Error`s).
//!
//! Covered: `type` (object, array, string, integer, number, boolean), `nullable`,
//! `properties`, `required`, `additionalProperties`, `items`, `enum`, `minimum`/`maximum`
//! (and their exclusive forms), `multipleOf`, `minLength`/`maxLength`, `pattern`,
//! `minItems`/`maxItems`, `minProperties`/`maxProperties`, `default`,
//! `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-int-or-string` and
//! `x-kubernetes-embedded-resource` (whose apiVersion/kind/metadata are kept). Not covered:
//! `format`, `allOf`/`anyOf`/`oneOf`/`not`, `uniqueItems`, CEL rules (newer than v1.20).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::{Map, Value};

use crate::errors::Cause;

/// A version's schema (`spec.versions[].schema.openAPIV3Schema`).
#[derive(Debug, Clone)]
pub struct Schema {
    root: JSONSchemaProps,
}

/// Fields every object keeps whatever its schema says.
const OBJECT_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

impl Schema {
    pub fn new(root: JSONSchemaProps) -> Self {
        Schema { root }
    }

    pub fn root(&self) -> &JSONSchemaProps {
        &self.root
    }

    /// Fills defaults, then drops fields the schema does not specify (upstream's decoder does
    /// both before validation).
    pub fn default_and_prune(&self, obj: &mut Value) {
        default(&self.root, obj);
        prune(&self.root, obj, true);
    }

    /// Schema violations of `obj`, as `field.Error` causes.
    pub fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let Value::Object(root) = obj else {
            return causes;
        };
        // metadata, apiVersion and kind are validated as ObjectMeta/TypeMeta elsewhere.
        let body: Map<String, Value> = root
            .iter()
            .filter(|(k, _)| !OBJECT_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        validate(&self.root, &Value::Object(body), "", &mut causes);
        causes
    }
}

fn item_schema(schema: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match schema.items.as_ref()? {
        JSONSchemaPropsOrArray::Schema(s) => Some(s),
        JSONSchemaPropsOrArray::Schemas(list) => list.first(),
    }
}

fn additional_schema(schema: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match schema.additional_properties.as_ref()? {
        JSONSchemaPropsOrBool::Schema(s) => Some(s),
        JSONSchemaPropsOrBool::Bool(_) => None,
    }
}

fn preserves_unknown(schema: &JSONSchemaProps) -> bool {
    schema.x_kubernetes_preserve_unknown_fields == Some(true)
        || matches!(
            schema.additional_properties,
            Some(JSONSchemaPropsOrBool::Bool(true))
        )
}

/// Structural defaulting: a missing property with a `default` gets it, recursively.
fn default(schema: &JSONSchemaProps, value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(properties) = &schema.properties {
                for (name, prop) in properties {
                    if !map.contains_key(name)
                        && let Some(default) = &prop.default
                    {
                        map.insert(name.clone(), default.0.clone());
                    }
                    if let Some(child) = map.get_mut(name) {
                        self::default(prop, child);
                    }
                }
            }
            if let Some(additional) = additional_schema(schema) {
                for child in map.values_mut() {
                    self::default(additional, child);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = item_schema(schema) {
                for child in items {
                    self::default(item, child);
                }
            }
        }
        _ => {}
    }
}

/// Drops object fields the schema does not name, unless it preserves unknown fields.
fn prune(schema: &JSONSchemaProps, value: &mut Value, root: bool) {
    match value {
        Value::Object(map) => {
            let keep_object_fields = root || schema.x_kubernetes_embedded_resource == Some(true);
            if let Some(additional) = additional_schema(schema) {
                for child in map.values_mut() {
                    prune(additional, child, false);
                }
                return;
            }
            let properties = schema.properties.as_ref();
            let preserve = preserves_unknown(schema);
            map.retain(|name, _| {
                preserve
                    || properties.is_some_and(|p| p.contains_key(name))
                    || (keep_object_fields && OBJECT_FIELDS.contains(&name.as_str()))
            });
            for (name, child) in map.iter_mut() {
                match properties.and_then(|p| p.get(name)) {
                    Some(prop) => prune(prop, child, false),
                    None if keep_object_fields && name == "metadata" => {}
                    None => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = item_schema(schema) {
                for child in items {
                    prune(item, child, false);
                }
            }
        }
        _ => {}
    }
}

/// The JSON type name go-openapi reports for a value.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(expected: &str, value: &Value) -> bool {
    match (expected, value) {
        ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("string", Value::String(_))
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// `field.Error` rendering of a bad value (Go's `%v`/`%q`/`%#v`).
fn render(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "\"null\"".to_string(),
        Value::Bool(_) | Value::Number(_) => value.to_string(),
        other => other.to_string(),
    }
}

fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

fn child_path(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// The path as go-openapi names it in its messages (the root is `body`'s `.`).
fn shown(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}

fn invalid(path: &str, value: &Value, detail: String) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        format!("Invalid value: {}: {detail}", render(value)),
        Some(shown(path)),
    )
}

fn validate(schema: &JSONSchemaProps, value: &Value, path: &str, causes: &mut Vec<Cause>) {
    if value.is_null() {
        if schema.nullable == Some(true) || schema.type_.is_none() {
            return;
        }
        let expected = schema.type_.as_deref().unwrap_or_default();
        causes.push(Cause::new(
            "FieldValueInvalid",
            format!(
                "Invalid value: \"null\": {} in body must be of type {expected}: \"null\"",
                shown(path)
            ),
            Some(shown(path)),
        ));
        return;
    }
    let int_or_string = schema.x_kubernetes_int_or_string == Some(true);
    if int_or_string {
        if !matches!(value, Value::String(_)) && !type_matches("integer", value) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                format!(
                    "Invalid value: \"{}\": {} in body must be of type integer,string: \"{}\"",
                    type_name(value),
                    shown(path),
                    type_name(value)
                ),
                Some(shown(path)),
            ));
            return;
        }
    } else if let Some(expected) = schema.type_.as_deref()
        && !type_matches(expected, value)
    {
        let actual = type_name(value);
        // v1.20 reports type mismatches as FieldValueInvalid (field.Invalid), not TypeInvalid.
        causes.push(Cause::new(
            "FieldValueInvalid",
            format!(
                "Invalid value: \"{actual}\": {} in body must be of type {expected}: \"{actual}\"",
                shown(path)
            ),
            Some(shown(path)),
        ));
        return;
    }
    if let Some(allowed) = &schema.enum_
        && !allowed.iter().any(|a| &a.0 == value)
    {
        let values: Vec<String> = allowed
            .iter()
            .map(|a| match &a.0 {
                Value::String(s) => format!("{s:?}"),
                other => format!("{:?}", other.to_string()),
            })
            .collect();
        causes.push(Cause::new(
            "FieldValueNotSupported",
            format!(
                "Unsupported value: {}: supported values: {}",
                render(value),
                values.join(", ")
            ),
            Some(shown(path)),
        ));
    }
    match value {
        Value::Object(map) => validate_object(schema, map, path, causes),
        Value::Array(items) => validate_array(schema, items, path, causes),
        Value::String(text) => validate_string(schema, text, value, path, causes),
        Value::Number(n) => validate_number(schema, n.as_f64().unwrap_or(0.0), value, path, causes),
        _ => {}
    }
}

fn validate_object(
    schema: &JSONSchemaProps,
    map: &Map<String, Value>,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    for name in schema.required.iter().flatten() {
        if !map.contains_key(name) {
            causes.push(Cause::new(
                "FieldValueRequired",
                "Required value",
                Some(&child_path(path, name)),
            ));
        }
    }
    let count = map.len() as i64;
    if let Some(min) = schema.min_properties
        && count < min
    {
        causes.push(invalid(
            path,
            &Value::from(count),
            format!(
                "{} in body should have at least {min} properties",
                shown(path)
            ),
        ));
    }
    if let Some(max) = schema.max_properties
        && count > max
    {
        causes.push(invalid(
            path,
            &Value::from(count),
            format!(
                "{} in body should have at most {max} properties",
                shown(path)
            ),
        ));
    }
    // go-openapi: the required list in its order (above), then properties by name.
    let properties = schema.properties.as_ref();
    let mut names: Vec<&String> = map.keys().collect();
    names.sort();
    for name in names {
        let child_schema = properties
            .and_then(|p| p.get(name))
            .or_else(|| additional_schema(schema));
        if let Some(child_schema) = child_schema {
            validate(child_schema, &map[name], &child_path(path, name), causes);
        }
    }
}

fn validate_array(schema: &JSONSchemaProps, items: &[Value], path: &str, causes: &mut Vec<Cause>) {
    let count = items.len() as i64;
    if let Some(min) = schema.min_items
        && count < min
    {
        causes.push(invalid(
            path,
            &Value::from(count),
            format!("{} in body should have at least {min} items", shown(path)),
        ));
    }
    if let Some(max) = schema.max_items
        && count > max
    {
        causes.push(invalid(
            path,
            &Value::from(count),
            format!("{} in body should have at most {max} items", shown(path)),
        ));
    }
    if let Some(item) = item_schema(schema) {
        for (i, child) in items.iter().enumerate() {
            validate(item, child, &format!("{path}[{i}]"), causes);
        }
    }
}

fn validate_string(
    schema: &JSONSchemaProps,
    text: &str,
    value: &Value,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    // go-openapi's string validator reports the first failure only, in this order.
    let length = text.chars().count() as i64;
    let detail = if let Some(max) = schema.max_length.filter(|max| length > *max) {
        format!("should be at most {max} chars long")
    } else if let Some(min) = schema.min_length.filter(|min| length < *min) {
        format!("should be at least {min} chars long")
    } else if let Some(pattern) = schema
        .pattern
        .as_ref()
        .filter(|p| regex::Regex::new(p).is_ok_and(|re| !re.is_match(text)))
    {
        format!("should match '{pattern}'")
    } else {
        return;
    };
    causes.push(invalid(
        path,
        value,
        format!("{} in body {detail}", shown(path)),
    ));
}

fn validate_number(
    schema: &JSONSchemaProps,
    n: f64,
    value: &Value,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    if let Some(min) = schema.minimum {
        let exclusive = schema.exclusive_minimum == Some(true);
        if n < min || (exclusive && n == min) {
            let relation = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            causes.push(invalid(
                path,
                value,
                format!(
                    "{} in body should be {relation} {}",
                    shown(path),
                    number_text(min)
                ),
            ));
        }
    }
    if let Some(max) = schema.maximum {
        let exclusive = schema.exclusive_maximum == Some(true);
        if n > max || (exclusive && n == max) {
            let relation = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            causes.push(invalid(
                path,
                value,
                format!(
                    "{} in body should be {relation} {}",
                    shown(path),
                    number_text(max)
                ),
            ));
        }
    }
    if let Some(factor) = schema.multiple_of
        && factor != 0.0
        && (n / factor).fract() != 0.0
    {
        causes.push(invalid(
            path,
            value,
            format!(
                "{} in body should be a multiple of {}",
                shown(path),
                number_text(factor)
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: Value) -> Schema {
        Schema::new(serde_json::from_value(value).unwrap())
    }

    fn module_schema() -> Schema {
        schema(json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["world"],
                    "properties": {
                        "world": {"type": "string", "minLength": 1},
                        "mode": {"type": "string", "enum": ["active", "shadow"], "default": "active"},
                        "deadlineMs": {"type": "integer", "minimum": 1, "maximum": 1000},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}}
                    }
                },
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
            }
        }))
    }

    #[test]
    fn defaults_fill_missing_fields_and_pruning_drops_unknown_ones() {
        let mut obj = json!({
            "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a"},
            "spec": {"world": "w", "bogus": 1, "labels": {"a": "b"}, "extra": {"any": {"thing": 1}}},
            "top": true
        });
        module_schema().default_and_prune(&mut obj);
        assert_eq!(obj["spec"]["mode"], "active");
        assert!(obj["spec"].get("bogus").is_none() && obj.get("top").is_none());
        assert_eq!(obj["spec"]["labels"]["a"], "b");
        assert_eq!(obj["spec"]["extra"]["any"]["thing"], 1);
        assert_eq!(obj["metadata"]["name"], "a");
    }

    #[test]
    fn violations_are_reported_with_upstream_messages() {
        let obj = json!({"metadata": {"name": "a"}, "spec": {
            "mode": "fast", "deadlineMs": 0, "tags": ["a", "b", "c"], "labels": {"x": 1}
        }});
        let causes = module_schema().validate(&obj);
        let rendered: Vec<(String, String, String)> = causes
            .iter()
            .map(|c| {
                (
                    c.reason.clone(),
                    c.field.clone().unwrap(),
                    c.message.clone(),
                )
            })
            .collect();
        let expect = |reason: &str, field: &str, message: &str| {
            assert!(
                rendered.contains(&(reason.into(), field.into(), message.into())),
                "{rendered:#?} lacks {field}: {message}"
            );
        };
        expect("FieldValueRequired", "spec.world", "Required value");
        expect(
            "FieldValueNotSupported",
            "spec.mode",
            "Unsupported value: \"fast\": supported values: \"active\", \"shadow\"",
        );
        expect(
            "FieldValueInvalid",
            "spec.deadlineMs",
            "Invalid value: 0: spec.deadlineMs in body should be greater than or equal to 1",
        );
        expect(
            "FieldValueInvalid",
            "spec.tags",
            "Invalid value: 3: spec.tags in body should have at most 2 items",
        );
        expect(
            "FieldValueInvalid",
            "spec.labels.x",
            "Invalid value: \"integer\": spec.labels.x in body must be of type string: \"integer\"",
        );
        assert!(
            module_schema()
                .validate(&json!({"spec": {"world": "w"}}))
                .is_empty()
        );
    }
}
