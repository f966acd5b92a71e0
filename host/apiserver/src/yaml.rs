//! Multi-document YAML manifests (seed state for `rekon apiserver --state`).

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
