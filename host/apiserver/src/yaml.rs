//! YAML: request bodies, and multi-document manifests (seed state for `rekon apiserver
//! --state`), parsed within an expansion budget.
//!
//! Anchors and aliases let a few kilobytes name billions of nodes (the "billion laughs",
//! CVE-2019-11253 against kube-apiserver). serde_yaml bounds alias jumps only relative to the
//! document's event count, which nested anchors get around, so the value is built here by a
//! visitor that counts every node and scalar byte it materializes and stops past a budget
//! proportional to the input: an alias-free document always fits, a bomb is refused after at
//! most that much work and memory.

use serde::de::{self, DeserializeSeed, Visitor};
use serde_json::{Map, Value};

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
    Bounded(&mut Budget::for_input(body.len()))
        .deserialize(serde_yaml::Deserializer::from_slice(body))
}

/// What a document of `len` bytes may expand to. Without aliases a node takes at least one
/// byte of input and a scalar at most its own bytes, so twice the input (plus room for small
/// documents that reuse an anchor) is never reached by an honest document.
struct Budget {
    nodes: usize,
    bytes: usize,
}

impl Budget {
    fn for_input(len: usize) -> Self {
        Budget {
            nodes: len.saturating_mul(2).saturating_add(10_000),
            bytes: len.saturating_mul(2).saturating_add(1 << 20),
        }
    }

    /// Charges one node holding `bytes` of scalar text.
    fn charge<E: de::Error>(&mut self, bytes: usize) -> Result<(), E> {
        if self.nodes == 0 || bytes > self.bytes {
            return Err(E::custom(
                "the document expands (through anchors and aliases) past the size the server accepts",
            ));
        }
        self.nodes -= 1;
        self.bytes -= bytes;
        Ok(())
    }
}

/// Builds a `serde_json::Value` as its own `Deserialize` does, charging the budget.
struct Bounded<'a>(&'a mut Budget);

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.0.charge(0)?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.0.charge(0)?;
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.0.charge(0)?;
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.0.charge(0)?;
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.0.charge(v.len())?;
        Ok(Value::String(v.to_string()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.0.charge(0)?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.0.charge(0)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Bounded(&mut *self.0))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.0.charge(0)?;
        let mut fields = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.0.charge(key.len())?;
            let value = map.next_value_seed(Bounded(&mut *self.0))?;
            fields.insert(key, value);
        }
        Ok(Value::Object(fields))
    }
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
    let mut budget = Budget::for_input(text.len());
    for (index, document) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = Bounded(&mut budget)
            .deserialize(document)
            .map_err(|source| YamlError::Parse { index, source })?;
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

    /// Nested anchors: ~100 KB naming 10^10 scalars (CVE-2019-11253's shape).
    fn anchor_bomb() -> String {
        let mut text =
            String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\na0: &a0 [");
        text.push_str(&vec!["x"; 40_000].join(","));
        text.push_str("]\n");
        for level in 1..=4 {
            let aliases = vec![format!("*a{}", level - 1); 2_500 / level].join(",");
            text.push_str(&format!("a{level}: &a{level} [{aliases}]\n"));
        }
        text
    }

    #[test]
    fn anchor_bombs_are_refused_quickly() {
        let bomb = anchor_bomb();
        assert!((50_000..150_000).contains(&bomb.len()), "{}", bomb.len());
        let started = std::time::Instant::now();
        let err = from_slice(bomb.as_bytes()).unwrap_err().to_string();
        assert!(
            err.contains("expands (through anchors and aliases)"),
            "{err}"
        );
        let err = load_yaml_documents(&bomb).unwrap_err().to_string();
        assert!(
            err.starts_with("YAML document 0: ") && err.contains("the document expands"),
            "{err}"
        );
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(2), "{took:?}");
        // Anchors within the budget still expand.
        let reused = "a: &x {k: v}\nb: *x\nc: [*x, *x]\n";
        let value = from_slice(reused.as_bytes()).unwrap();
        assert_eq!(value["c"][1]["k"], "v");
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
