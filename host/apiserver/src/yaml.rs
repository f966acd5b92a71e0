//! YAML: request bodies, and multi-document manifests (seed state for `rekon apiserver
//! --state`).

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    #[error("YAML document {index}: {source}")]
    Parse {
        index: usize,
        source: serde_yaml::Error,
    },
    #[error("YAML document {index} is not an object")]
    NotAnObject { index: usize },
}

/// A YAML (or JSON, its subset) request body. JSON bodies skip the YAML parser, as upstream's
/// serializer does: clients such as `kubectl apply --server-side` send JSON under a YAML
/// media type, and libyaml is far slower than a JSON parser on large documents.
pub fn from_slice(body: &[u8]) -> Result<Value, serde_yaml::Error> {
    if looks_like_json(body)
        && let Ok(value) = serde_json::from_slice(body)
    {
        return Ok(value);
    }
    serde_yaml::from_slice(body)
}

/// First non-space byte is `{` (what `utilyaml.IsJSONBuffer` checks).
fn looks_like_json(body: &[u8]) -> bool {
    body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// "an object", "a list" ... for messages about bodies of the wrong shape.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Objects of every document; a `kind: List` (or `...List` with `items`) is expanded; empty
/// documents are skipped.
pub fn load_yaml_documents(text: &str) -> Result<Vec<Value>, YamlError> {
    let mut out = Vec::new();
    for (index, document) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value =
            Value::deserialize(document).map_err(|source| YamlError::Parse { index, source })?;
        match value {
            Value::Null => {}
            Value::Object(map) => {
                let is_list = map
                    .get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.ends_with("List"));
                match (is_list, map.get("items")) {
                    (true, Some(Value::Array(items))) => out.extend(items.iter().cloned()),
                    _ => out.push(Value::Object(map)),
                }
            }
            _ => return Err(YamlError::NotAnObject { index }),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ~100 KB ConfigMap manifests of different shapes: how long one parse takes.
    #[test]
    fn large_bodies_parse_fast() {
        let value = |len: usize| "x".repeat(len);
        let block = |keys: usize| {
            let mut text =
                String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n");
            for k in 0..keys {
                text.push_str(&format!("  k{k}: {}\n", value(100_000 / keys)));
            }
            text
        };
        let json = |keys: usize| {
            let data: serde_json::Map<String, Value> = (0..keys)
                .map(|k| (format!("k{k}"), Value::String(value(100_000 / keys))))
                .collect();
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": data}).to_string()
        };
        for (shape, text) in [
            ("block 1 key", block(1)),
            ("block 5000 keys", block(5000)),
            ("json 1 key", json(1)),
            ("json 5000 keys", json(5000)),
        ] {
            let started = std::time::Instant::now();
            let parsed = from_slice(text.as_bytes()).unwrap();
            let took = started.elapsed();
            eprintln!("{shape}: {} bytes in {took:?}", text.len());
            assert_eq!(parsed["metadata"]["name"], "a", "{shape}");
            assert!(
                took < std::time::Duration::from_millis(300),
                "{shape}: {took:?}"
            );
        }
    }

    #[test]
    fn documents_and_lists() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\nkind: List\napiVersion: v1\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n";
        let docs = load_yaml_documents(text).unwrap();
        let names: Vec<_> = docs
            .iter()
            .map(|d| d["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["a", "b", "c"]);
        assert!(matches!(
            load_yaml_documents("- 1\n"),
            Err(YamlError::NotAnObject { index: 0 })
        ));
    }
}
