//! Field paths (`spec.replicas`, `spec.volumes[*].persistentVolumeClaim.claimName`):
//! parsed once from a module's description, then used to project objects (only
//! the declared fields cross the boundary) and to read index values.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use serde_json::{Map, Value};

/// One step of a path: a field, or every element of the list in that field.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Field(String),
    Each(String),
}

/// A parsed field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field path {path:?}: {reason}")]
pub struct PathError {
    pub path: String,
    pub reason: &'static str,
}

impl FieldPath {
    pub fn parse(text: &str) -> Result<Self, PathError> {
        let error = |reason| PathError {
            path: text.to_string(),
            reason,
        };
        if text.is_empty() {
            return Err(error("empty"));
        }
        let steps = text
            .split('.')
            .map(|part| {
                let (name, each) = match part.strip_suffix("[*]") {
                    Some(name) => (name, true),
                    None => (part, false),
                };
                if name.is_empty() || name.contains(['[', ']', '*']) {
                    return Err(error(
                        "each step is a field name, optionally followed by [*]",
                    ));
                }
                Ok(if each {
                    Step::Each(name.to_string())
                } else {
                    Step::Field(name.to_string())
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            text: text.to_string(),
            steps,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `other` is this path or lies under it (`status` covers `status.phase`).
    pub fn covers(&self, other: &FieldPath) -> bool {
        other.steps.len() >= self.steps.len()
            && self.steps.iter().zip(&other.steps).all(|(a, b)| a == b)
    }

    /// The strings found at this path (every element for `[*]` steps).
    pub fn strings<'a>(&self, object: &'a Value) -> Vec<&'a str> {
        let mut found = Vec::new();
        collect(object, &self.steps, &mut found);
        found
    }

    /// The first value at this path, if any.
    pub fn first<'a>(&self, object: &'a Value) -> Option<&'a Value> {
        let mut value = object;
        for step in &self.steps {
            value = match step {
                Step::Field(name) => value.get(name)?,
                Step::Each(name) => value.get(name)?.as_array()?.first()?,
            };
        }
        Some(value)
    }

    /// Copies what `object` holds at this path into `into`, keeping the shape
    /// (list elements stay in place, each reduced to the rest of the path).
    pub fn copy(&self, object: &Value, into: &mut Map<String, Value>) {
        copy(object, &self.steps, into);
    }
}

fn collect<'a>(value: &'a Value, steps: &[Step], found: &mut Vec<&'a str>) {
    let Some((step, rest)) = steps.split_first() else {
        if let Some(text) = value.as_str() {
            found.push(text);
        }
        return;
    };
    match step {
        Step::Field(name) => {
            if let Some(next) = value.get(name) {
                collect(next, rest, found);
            }
        }
        Step::Each(name) => {
            for element in value
                .get(name)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                collect(element, rest, found);
            }
        }
    }
}

fn copy(value: &Value, steps: &[Step], into: &mut Map<String, Value>) {
    let Some((step, rest)) = steps.split_first() else {
        return;
    };
    match step {
        Step::Field(name) => {
            let Some(next) = value.get(name) else { return };
            if rest.is_empty() {
                into.insert(name.clone(), next.clone());
            } else if next.is_object() {
                let slot = into
                    .entry(name.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(slot) = slot {
                    copy(next, rest, slot);
                }
            }
        }
        Step::Each(name) => {
            let Some(elements) = value.get(name).and_then(Value::as_array) else {
                return;
            };
            if rest.is_empty() {
                into.insert(name.clone(), Value::Array(elements.clone()));
                return;
            }
            let slot = into
                .entry(name.clone())
                .or_insert_with(|| Value::Array(vec![Value::Object(Map::new()); elements.len()]));
            if let Value::Array(slots) = slot {
                for (element, slot) in elements.iter().zip(slots.iter_mut()) {
                    if let Value::Object(slot) = slot {
                        copy(element, rest, slot);
                    }
                }
            }
        }
    }
}

/// The metadata every projected object keeps: what identifies and guards it,
/// and what scopes and mappings read.
const METADATA: &[&str] = &[
    "namespace",
    "name",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "finalizers",
    "labels",
    "annotations",
    "ownerReferences",
];

/// What a decision sees of one kind: `apiVersion`, `kind`, the identifying
/// metadata and the declared field paths.
#[derive(Debug, Clone, Default)]
pub struct Projection {
    paths: Vec<FieldPath>,
}

impl Projection {
    pub fn new(paths: &[String]) -> Result<Self, PathError> {
        Ok(Self {
            paths: paths
                .iter()
                .map(|p| FieldPath::parse(p))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Adds paths (the primary's declared status fields, so a module sees what it wrote).
    pub fn with(mut self, extra: impl IntoIterator<Item = FieldPath>) -> Self {
        for path in extra {
            if !self.paths.iter().any(|p| p.covers(&path)) {
                self.paths.push(path);
            }
        }
        self
    }

    pub fn project(&self, object: &Value) -> Value {
        let mut out = Map::new();
        for field in ["apiVersion", "kind"] {
            if let Some(value) = object.get(field) {
                out.insert(field.into(), value.clone());
            }
        }
        if let Some(metadata) = object.get("metadata").and_then(Value::as_object) {
            let kept: Map<String, Value> = METADATA
                .iter()
                .filter_map(|field| Some((field.to_string(), metadata.get(*field)?.clone())))
                .collect();
            out.insert("metadata".into(), Value::Object(kept));
        }
        for path in &self.paths {
            path.copy(object, &mut out);
        }
        Value::Object(out)
    }

    /// [`Projection::project`] of a decoded object, without first serializing
    /// what the projection drops (managedFields, undeclared fields).
    pub fn project_object(&self, object: &DynamicObject) -> Value {
        let in_metadata =
            |p: &FieldPath| matches!(p.steps.first(), Some(Step::Field(f)) if f == "metadata");
        if self.paths.iter().any(in_metadata) {
            // A declared metadata path: project the whole object.
            return self.project(&serde_json::to_value(object).unwrap_or(Value::Null));
        }
        let mut out = Map::new();
        if let Some(types) = &object.types {
            out.insert("apiVersion".into(), types.api_version.clone().into());
            out.insert("kind".into(), types.kind.clone().into());
        }
        let m = &object.metadata;
        // The fields of METADATA.
        let kept = ObjectMeta {
            namespace: m.namespace.clone(),
            name: m.name.clone(),
            uid: m.uid.clone(),
            resource_version: m.resource_version.clone(),
            generation: m.generation,
            creation_timestamp: m.creation_timestamp.clone(),
            deletion_timestamp: m.deletion_timestamp.clone(),
            deletion_grace_period_seconds: m.deletion_grace_period_seconds,
            finalizers: m.finalizers.clone(),
            labels: m.labels.clone(),
            annotations: m.annotations.clone(),
            owner_references: m.owner_references.clone(),
            ..ObjectMeta::default()
        };
        out.insert(
            "metadata".into(),
            serde_json::to_value(kept).unwrap_or_default(),
        );
        for path in &self.paths {
            path.copy(&object.data, &mut out);
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": { "name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "3",
                          "managedFields": [{ "manager": "kubectl" }], "labels": { "app": "web" } },
            "spec": {
                "nodeName": "n1",
                "containers": [{ "name": "c", "image": "i" }],
                "volumes": [
                    { "name": "a", "persistentVolumeClaim": { "claimName": "data" } },
                    { "name": "b", "emptyDir": {} },
                    { "name": "c", "persistentVolumeClaim": { "claimName": "logs", "readOnly": true } }
                ]
            },
            "status": { "phase": "Running" }
        })
    }

    #[test]
    fn strings_follow_every_list_element() {
        let path = FieldPath::parse("spec.volumes[*].persistentVolumeClaim.claimName").unwrap();
        assert_eq!(path.strings(&pod()), ["data", "logs"]);
        assert!(
            FieldPath::parse("spec.nodeName")
                .unwrap()
                .strings(&json!({}))
                .is_empty()
        );
    }

    #[test]
    fn a_projection_keeps_identity_and_the_declared_paths_only() {
        let projection = Projection::new(&[
            "spec.volumes[*].persistentVolumeClaim.claimName".into(),
            "status.phase".into(),
        ])
        .unwrap();
        let projected = projection.project(&pod());
        assert_eq!(
            projected,
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": { "name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "3",
                              "labels": { "app": "web" } },
                "spec": { "volumes": [
                    { "persistentVolumeClaim": { "claimName": "data" } },
                    {},
                    { "persistentVolumeClaim": { "claimName": "logs" } }
                ] },
                "status": { "phase": "Running" }
            })
        );
    }

    #[test]
    fn a_decoded_object_projects_as_its_json_does() {
        let object: DynamicObject = serde_json::from_value(pod()).unwrap();
        for paths in [
            vec!["spec.volumes[*].persistentVolumeClaim.claimName".into()],
            vec!["metadata.managedFields".into(), "status".into()],
        ] {
            let projection = Projection::new(&paths).unwrap();
            assert_eq!(
                projection.project_object(&object),
                projection.project(&pod()),
                "{paths:?}"
            );
        }
    }

    #[test]
    fn bad_paths_are_refused_with_the_path() {
        for bad in ["", "spec..x", "spec.[*]", "spec.a[0]", "spec.*"] {
            let err = FieldPath::parse(bad).unwrap_err();
            assert_eq!(err.path, bad);
        }
    }

    #[test]
    fn a_path_covers_itself_and_what_lies_under_it() {
        let status = FieldPath::parse("status").unwrap();
        let phase = FieldPath::parse("status.phase").unwrap();
        assert!(status.covers(&phase));
        assert!(phase.covers(&phase));
        assert!(!phase.covers(&status));
        assert!(!FieldPath::parse("stat").unwrap().covers(&phase));
    }
}
