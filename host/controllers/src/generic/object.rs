//! What a controller module's caches hold: the projected JSON of one object,
//! with its key and resourceVersion read once.

use std::time::Instant;

use serde_json::Value;

use crate::cache::{ObjectKey, Projection};

#[derive(Debug, Clone)]
pub struct Cached {
    pub key: ObjectKey,
    pub resource_version: String,
    /// The projection (see `paths::Projection`): what a decision is given.
    pub value: Value,
    /// When the host made this copy from a watch event (a shared live list
    /// must be issued after it: see `live`).
    pub observed: Instant,
}

impl Cached {
    pub fn new(value: Value) -> Self {
        let meta = |field: &str| {
            value
                .pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Self {
            key: ObjectKey::new(meta("namespace"), meta("name")),
            resource_version: meta("resourceVersion"),
            value,
            observed: Instant::now(),
        }
    }

    pub fn uid(&self) -> &str {
        self.value
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
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
