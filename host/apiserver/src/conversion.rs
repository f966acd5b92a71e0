//! Resources served in more than one group share one storage, like upstream's storage
//! version: objects are stored in the storage resource's shape and converted at the storage
//! boundary for the resource a request addresses.
//!
//! The only such pair here is `events.k8s.io/v1` Event over core/v1 Event (upstream
//! `pkg/apis/events/v1/conversion.go`: `note` ↔ `message`, `regarding` ↔ `involvedObject`,
//! `reportingController` ↔ `reportingComponent`, `deprecated*` ↔ the legacy fields).

use serde_json::{Map, Value, json};

use crate::resources::ResourceId;

/// (events.k8s.io/v1 field, core/v1 field); every other field has the same name in both.
const EVENT_FIELD_RENAMES: &[(&str, &str)] = &[
    ("note", "message"),
    ("regarding", "involvedObject"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// `object` of `resource` in its storage resource's shape.
pub fn to_storage(resource: ResourceId, object: Value) -> Value {
    let storage = resource.storage();
    if storage == resource {
        return object;
    }
    convert(object, storage, |(served, stored)| (served, stored))
}

/// A stored `object` in the shape of `resource`.
pub fn from_storage(resource: ResourceId, object: Value) -> Value {
    if resource.storage() == resource {
        return object;
    }
    convert(object, resource, |(served, stored)| (stored, served))
}

/// Renames the Event fields (`direction` picks (from, to) of each pair) and sets the target
/// resource's apiVersion and kind. Only objects carry the renamed fields; anything else passes.
fn convert(
    object: Value,
    target: ResourceId,
    direction: fn((&'static str, &'static str)) -> (&'static str, &'static str),
) -> Value {
    let Value::Object(mut fields) = object else {
        return object;
    };
    let mut renamed = Map::new();
    for (from, to) in EVENT_FIELD_RENAMES.iter().copied().map(direction) {
        if let Some(value) = fields.remove(from) {
            renamed.insert(to.to_string(), value);
        }
    }
    fields.extend(renamed);
    let info = target.info();
    fields.insert("apiVersion".into(), json!(info.api_version()));
    fields.insert("kind".into(), json!(info.kind));
    Value::Object(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources;

    #[test]
    fn events_v1_round_trips_through_the_core_storage() {
        let events = resources::by_kind("events.k8s.io/v1", "Event").unwrap();
        let event = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "ns"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "note": "removed", "regarding": {"kind": "Pod", "name": "p"},
            "reportingController": "rekon", "reportingInstance": "host-1",
            "deprecatedCount": 2, "reason": "Done", "type": "Normal", "action": "Remove"
        });
        let stored = to_storage(events, event.clone());
        assert_eq!(stored["apiVersion"], "v1");
        assert_eq!(stored["message"], "removed");
        assert_eq!(stored["involvedObject"]["name"], "p");
        assert_eq!(stored["reportingComponent"], "rekon");
        assert_eq!(stored["reportingInstance"], "host-1");
        assert_eq!(stored["count"], 2);
        assert!(stored.get("note").is_none());
        assert_eq!(from_storage(events, stored), event);
    }

    #[test]
    fn resources_with_their_own_storage_pass_unchanged() {
        let core_events = resources::by_kind("v1", "Event").unwrap();
        let event = json!({"apiVersion": "v1", "kind": "Event", "message": "m"});
        assert_eq!(to_storage(core_events, event.clone()), event);
        assert_eq!(from_storage(core_events, event.clone()), event);
    }
}
