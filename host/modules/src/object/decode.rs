//! One `DecisionModule` from its stored JSON, on its own: an object that does
//! not parse (written under an older CRD, or around the schema) is refused
//! alone, naming the field, and every other object is served.

use kube::ResourceExt;
use kube::api::DynamicObject;

use crate::object::resource::{DecisionModule, DecisionModuleStatus};
use crate::refusal::{Refusal, RefusalReason};

/// The typed object, or why it does not parse. Its status is read leniently:
/// a status rekon cannot read is rewritten, never a reason to refuse.
pub fn decode(raw: &DynamicObject) -> Result<DecisionModule, Refusal> {
    let name = raw.name_any();
    let invalid = |message: String| {
        Refusal::new(
            RefusalReason::InvalidSpec,
            format!("DecisionModule {name}: {message}"),
        )
    };
    let mut value = serde_json::to_value(raw).map_err(|err| invalid(err.to_string()))?;
    let status = value
        .as_object_mut()
        .and_then(|fields| fields.remove("status"));
    let mut object: DecisionModule = serde_path_to_error::deserialize(value)
        .map_err(|err| invalid(format!("{}: {}", err.path(), err.inner())))?;
    object.status = status.and_then(|s| serde_json::from_value(s).ok());
    Ok(object)
}

/// The status an object shows now, if rekon can read it.
pub fn status_of(raw: &DynamicObject) -> Option<DecisionModuleStatus> {
    raw.data
        .get("status")
        .and_then(|s| serde_json::from_value(s.clone()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(spec: serde_json::Value) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "rekon.dev/v1alpha1",
            "kind": "DecisionModule",
            "metadata": {"name": "big", "generation": 1},
            "spec": spec,
            "status": {"phase": "NoSuchPhase"},
        }))
        .unwrap()
    }

    #[test]
    fn an_integer_too_large_is_refused_naming_the_field() {
        let spec: serde_json::Value = serde_json::from_str(
            r#"{"world": "pvc-protection", "module": {"image": "r/m@sha256:00"}, "deadlineMs": 100000000000000000000}"#,
        )
        .unwrap();
        let refusal = decode(&raw(spec)).unwrap_err();
        assert_eq!(refusal.reason, RefusalReason::InvalidSpec);
        assert!(
            refusal
                .message
                .starts_with("DecisionModule big: spec.deadlineMs: "),
            "{}",
            refusal.message
        );
    }

    #[test]
    fn an_unreadable_status_does_not_refuse_the_object() {
        let object = decode(&raw(serde_json::json!({
            "world": "pvc-protection", "module": {"image": "r/m@sha256:00"}, "deadlineMs": 100
        })))
        .unwrap();
        assert_eq!(object.spec.deadline_ms, Some(100));
        assert!(object.status.is_none());
    }
}
