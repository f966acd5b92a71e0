//! What a controller module's caches hold: the projected JSON of one object as
//! text (what a decision is given: handed over without serializing it again),
//! with what the host reads on every event taken out once. The few readers of
//! other fields (validation, index values, selectors) parse it on demand.

use std::time::Instant;

use serde_json::Value;

use crate::cache::{ObjectKey, Projection};

#[derive(Debug, Clone)]
pub struct Cached {
    pub key: ObjectKey,
    pub resource_version: String,
    pub uid: String,
    /// The projection (see `paths::Projection`) as compact JSON text.
    pub text: Box<str>,
    /// When the host made this copy from a watch event (a shared live list
    /// must be issued after it: see `live`).
    pub observed: Instant,
}

impl Cached {
    pub fn new(value: &Value) -> Self {
        let meta = |field: &str| {
            value
                .get("metadata")
                .and_then(|m| m.get(field))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Self {
            key: ObjectKey::new(meta("namespace"), meta("name")),
            resource_version: meta("resourceVersion"),
            uid: meta("uid"),
            text: value.to_string().into_boxed_str(),
            observed: Instant::now(),
        }
    }

    /// The projection, parsed.
    pub fn value(&self) -> Value {
        // The text was written from a `Value`: it always parses.
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
}

impl Projection for Cached {
    fn key(&self) -> ObjectKey {
        self.key.clone()
    }

    fn resource_version(&self) -> &str {
        &self.resource_version
    }
}

/// Index values: the object's namespace.
pub fn by_namespace(object: &Cached) -> Vec<String> {
    vec![object.key.namespace.clone()]
}
