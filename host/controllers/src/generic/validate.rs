//! The pure plan of a decision's writes: every action checked against the
//! module's declared scope and the key, and reduced to the writes that would
//! change something. A refused action refuses the whole decision: nothing of it
//! is written.

use std::time::Duration;

use rekon_contract::controller::{Action, ChildRef, Event, KeyValue, Kind, PrimaryDeletion};
use serde_json::{Map, Value, json};

use super::describe::Checked;
use super::paths::FieldPath;
use crate::budget::{EVENT_NOTE_BYTES, cut};

/// Why an action was refused. Always names the key and the action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {action}: {reason}")]
pub struct Refusal {
    pub key: String,
    /// The action, cut short (guest text is bounded in every message).
    pub action: String,
    pub reason: String,
}

impl From<Refusal> for crate::validate::Rejected {
    fn from(refusal: Refusal) -> Self {
        Self::decision(
            &refusal.key,
            format!("{}: {}", refusal.action, refusal.reason),
        )
    }
}

/// A child write, checked.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildWrite {
    /// The object to create, with namespace and owner reference set.
    Create {
        kind: Kind,
        object: Value,
    },
    /// A merge patch conditional on the resourceVersion the decision saw.
    Update {
        kind: Kind,
        name: String,
        resource_version: String,
        patch: Value,
    },
    Delete(ChildRef),
}

/// What a decision writes, in order: the primary's metadata, its status, the
/// children, then the primary's deletion; Events last.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// A merge patch of `metadata` (finalizers, labels, annotations).
    pub metadata: Option<Value>,
    /// A merge patch of `status`.
    pub status: Option<Value>,
    pub children: Vec<ChildWrite>,
    pub delete_primary: Option<PrimaryDeletion>,
    pub events: Vec<Event>,
    pub requeue_after: Option<Duration>,
}

impl Plan {
    /// How many API writes the plan sends (Events not counted).
    pub fn writes(&self) -> usize {
        usize::from(self.metadata.is_some())
            + usize::from(self.status.is_some())
            + self.children.len()
            + usize::from(self.delete_primary.is_some())
    }
}

/// What the plan is checked against: the primary as the decision saw it and
/// the cached children of each watched kind.
pub struct Seen<'a> {
    pub key: &'a str,
    pub primary: &'a Value,
    /// Cached objects of a kind in the primary's namespace, by name.
    pub child: &'a dyn Fn(&Kind, &str) -> Option<Value>,
}

/// Checks `actions` against `scope` and reduces them to a [`Plan`].
pub fn plan(scope: &Checked, seen: &Seen<'_>, actions: &[Action]) -> Result<Plan, Refusal> {
    let mut plan = Plan::default();
    let meta = seen.primary.get("metadata").cloned().unwrap_or(json!({}));
    let str_list = |field: &str| -> Vec<String> {
        meta.get(field)
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut finalizers = str_list("finalizers");
    let original_finalizers = finalizers.clone();
    let mut labels = Map::new();
    let mut annotations = Map::new();
    let mut status = Map::new();
    let primary_uid = meta.get("uid").and_then(Value::as_str).unwrap_or_default();
    let namespace = meta
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();

    for action in actions {
        let refuse = |reason: String| Refusal {
            key: seen.key.to_string(),
            action: describe_action(action),
            reason,
        };
        match action {
            Action::AddFinalizer(name) | Action::RemoveFinalizer(name) => {
                if !scope.finalizers.contains(name) {
                    return Err(refuse(
                        "finalizer not declared in the module's scope".into(),
                    ));
                }
                let add = matches!(action, Action::AddFinalizer(_));
                let present = finalizers.contains(name);
                if add && !present {
                    if meta.get("deletionTimestamp").is_some_and(|t| !t.is_null()) {
                        return Err(refuse(
                            "the primary is being deleted: a finalizer can no longer be added"
                                .into(),
                        ));
                    }
                    finalizers.push(name.clone());
                } else if !add && present {
                    finalizers.retain(|f| f != name);
                }
            }
            Action::SetLabels(changes) => {
                set_keys(
                    "label",
                    &scope.labels,
                    &meta,
                    "labels",
                    changes,
                    &mut labels,
                )
                .map_err(refuse)?;
            }
            Action::SetAnnotations(changes) => set_keys(
                "annotation",
                &scope.annotations,
                &meta,
                "annotations",
                changes,
                &mut annotations,
            )
            .map_err(refuse)?,
            Action::PatchStatus(text) => {
                let patch = parse_object(text).map_err(refuse)?;
                check_status_paths(&scope.status_fields, &patch, "").map_err(refuse)?;
                let mut merged = Value::Object(std::mem::take(&mut status));
                json_patch::merge(&mut merged, &Value::Object(patch));
                if let Value::Object(merged) = merged {
                    status = merged;
                }
            }
            Action::DeletePrimary(deletion) => {
                if !scope.delete_primary {
                    return Err(refuse(
                        "deleting the primary is not in the module's scope".into(),
                    ));
                }
                if deletion.resource_version.is_empty() {
                    return Err(refuse(
                        "a delete needs the resourceVersion the decision saw".into(),
                    ));
                }
                plan.delete_primary = Some(deletion.clone());
            }
            Action::CreateChild(text) => {
                let object = parse_object(text).map_err(refuse)?;
                let (kind, object) =
                    child_to_create(scope, seen, object, namespace, primary_uid).map_err(refuse)?;
                if let Some(object) = object {
                    plan.children.push(ChildWrite::Create { kind, object });
                }
            }
            Action::UpdateChild(update) => {
                if !scope.child(&update.kind).is_some_and(|c| c.update) {
                    return Err(refuse(format!(
                        "updating {} is not in the module's scope",
                        update.kind
                    )));
                }
                let patch = parse_object(&update.patch).map_err(refuse)?;
                if let Some(metadata) = patch.get("metadata") {
                    let allowed = metadata
                        .as_object()
                        .is_some_and(|m| m.keys().all(|k| k == "labels" || k == "annotations"));
                    if !allowed {
                        return Err(refuse(
                            "a child update may change only labels and annotations of its metadata"
                                .into(),
                        ));
                    }
                }
                let current =
                    owned_child(seen, &update.kind, &update.name, primary_uid).map_err(refuse)?;
                if update.resource_version.is_empty() {
                    return Err(refuse(
                        "an update needs the resourceVersion the decision saw".into(),
                    ));
                }
                let mut merged = current.clone();
                json_patch::merge(&mut merged, &Value::Object(patch.clone()));
                if merged != current {
                    plan.children.push(ChildWrite::Update {
                        kind: update.kind.clone(),
                        name: update.name.clone(),
                        resource_version: update.resource_version.clone(),
                        patch: Value::Object(patch),
                    });
                }
            }
            Action::DeleteChild(child) => {
                if !scope.child(&child.kind).is_some_and(|c| c.delete) {
                    return Err(refuse(format!(
                        "deleting {} is not in the module's scope",
                        child.kind
                    )));
                }
                let current =
                    owned_child(seen, &child.kind, &child.name, primary_uid).map_err(refuse)?;
                let uid = current.pointer("/metadata/uid").and_then(Value::as_str);
                if uid != Some(child.uid.as_str()) {
                    return Err(refuse("the uid is not the cached child's".into()));
                }
                if child.resource_version.is_empty() {
                    return Err(refuse(
                        "a delete needs the resourceVersion the decision saw".into(),
                    ));
                }
                plan.children.push(ChildWrite::Delete(child.clone()));
            }
            Action::Event(event) => {
                if !scope.event_reasons.contains(&event.reason) {
                    return Err(refuse(
                        "event reason not declared in the module's scope".into(),
                    ));
                }
                plan.events.push(Event {
                    message: cut(&event.message, EVENT_NOTE_BYTES),
                    ..event.clone()
                });
            }
            Action::RequeueAfter(millis) => {
                let after = Duration::from_millis(*millis);
                plan.requeue_after = Some(plan.requeue_after.map_or(after, |d| d.min(after)));
            }
        }
    }

    let mut metadata = Map::new();
    if finalizers != original_finalizers {
        metadata.insert("finalizers".into(), json!(finalizers));
    }
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    plan.metadata = (!metadata.is_empty()).then_some(Value::Object(metadata));
    if !status.is_empty() {
        let current = seen.primary.get("status").cloned().unwrap_or(json!({}));
        let mut merged = current.clone();
        json_patch::merge(&mut merged, &Value::Object(status.clone()));
        if merged != current {
            plan.status = Some(Value::Object(status));
        }
    }
    Ok(plan)
}

/// Labels or annotations the module may set; only real changes are kept.
fn set_keys(
    what: &str,
    allowed: &[String],
    meta: &Value,
    field: &str,
    changes: &[KeyValue],
    into: &mut Map<String, Value>,
) -> Result<(), String> {
    let current = meta.get(field);
    for change in changes {
        if !allowed.contains(&change.key) {
            return Err(format!(
                "{what} {:?} not declared in the module's scope",
                cut(&change.key, 256)
            ));
        }
        let now = current
            .and_then(|m| m.get(&change.key))
            .and_then(Value::as_str);
        if now != change.value.as_deref() {
            into.insert(
                change.key.clone(),
                change.value.clone().map_or(Value::Null, Value::String),
            );
        }
    }
    Ok(())
}

/// Every path a status patch sets must lie under a declared status field.
fn check_status_paths(
    declared: &[FieldPath],
    patch: &Map<String, Value>,
    prefix: &str,
) -> Result<(), String> {
    for (field, value) in patch {
        let path = if prefix.is_empty() {
            field.clone()
        } else {
            format!("{prefix}.{field}")
        };
        let parsed = FieldPath::parse(&path).map_err(|e| e.to_string())?;
        if declared.iter().any(|d| d.covers(&parsed)) {
            continue;
        }
        match value.as_object() {
            Some(nested)
                if declared
                    .iter()
                    .any(|d| d.as_str().starts_with(&format!("{path}."))) =>
            {
                check_status_paths(declared, nested, &path)?
            }
            _ => {
                return Err(format!(
                    "status field {:?} not declared in the module's scope",
                    cut(&path, 256)
                ));
            }
        }
    }
    Ok(())
}

fn parse_object(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str(text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err("not a JSON object".into()),
        Err(err) => Err(format!("not JSON: {err}")),
    }
}

/// A cached child of the primary: it must exist and be controlled by the primary.
fn owned_child(
    seen: &Seen<'_>,
    kind: &Kind,
    name: &str,
    primary_uid: &str,
) -> Result<Value, String> {
    let child = (seen.child)(kind, name).ok_or_else(|| {
        format!(
            "no cached {kind} named {:?} in the primary's namespace",
            cut(name, 256)
        )
    })?;
    if !controlled_by(&child, primary_uid) {
        return Err(format!(
            "{kind} {:?} is not owned by the primary: only its own children may be written",
            cut(name, 256)
        ));
    }
    Ok(child)
}

fn controlled_by(object: &Value, uid: &str) -> bool {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter().any(|r| {
                r.get("controller").and_then(Value::as_bool) == Some(true)
                    && r.get("uid").and_then(Value::as_str) == Some(uid)
            })
        })
}

/// The child to create, in the primary's namespace with the primary as its
/// controller; `None` when the primary already owns a cached child of that name.
fn child_to_create(
    scope: &Checked,
    seen: &Seen<'_>,
    mut object: Map<String, Value>,
    namespace: &str,
    primary_uid: &str,
) -> Result<(Kind, Option<Value>), String> {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind_name = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    };
    let kind = Kind::new(group, version, kind_name);
    if !scope.child(&kind).is_some_and(|c| c.create) {
        return Err(format!("creating {kind} is not in the module's scope"));
    }
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("metadata is not an object")?;
    match metadata.get("namespace").and_then(Value::as_str) {
        Some(ns) if ns != namespace => {
            return Err(format!(
                "namespace {:?}: children live in the primary's namespace {namespace:?}",
                cut(ns, 256)
            ));
        }
        _ => {}
    }
    if metadata.contains_key("ownerReferences") {
        return Err("owner references are set by the host (the primary, as controller)".into());
    }
    let name = metadata
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if name.is_empty()
        && metadata
            .get("generateName")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        return Err("a child needs metadata.name or metadata.generateName".into());
    }
    if !name.is_empty()
        && let Some(existing) = (seen.child)(&kind, &name)
        && controlled_by(&existing, primary_uid)
    {
        return Ok((kind, None));
    }
    if !namespace.is_empty() {
        metadata.insert("namespace".into(), json!(namespace));
    }
    // The primary's kind from the description: a cached copy from a list has
    // no apiVersion or kind (list items carry none).
    let primary_kind = &scope.description.primary;
    metadata.insert(
        "ownerReferences".into(),
        json!([{
            "apiVersion": primary_kind.api_version(),
            "kind": primary_kind.kind,
            "name": seen.primary.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
            "uid": primary_uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }]),
    );
    Ok((kind, Some(Value::Object(object))))
}

/// One line naming an action, guest text cut short.
fn describe_action(action: &Action) -> String {
    let text = match action {
        Action::AddFinalizer(f) => format!("add-finalizer {f}"),
        Action::RemoveFinalizer(f) => format!("remove-finalizer {f}"),
        Action::SetLabels(kv) => format!("set-labels {}", keys(kv)),
        Action::SetAnnotations(kv) => format!("set-annotations {}", keys(kv)),
        Action::PatchStatus(p) => format!("patch-status {p}"),
        Action::DeletePrimary(_) => "delete-primary".into(),
        Action::CreateChild(c) => format!("create-child {c}"),
        Action::UpdateChild(u) => format!("update-child {} {}", u.kind, u.name),
        Action::DeleteChild(c) => format!("delete-child {} {}", c.kind, c.name),
        Action::Event(e) => format!("event {}", e.reason),
        Action::RequeueAfter(ms) => format!("requeue-after {ms}ms"),
    };
    cut(&text, 512)
}

fn keys(changes: &[KeyValue]) -> String {
    changes
        .iter()
        .map(|c| c.key.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use rekon_contract::controller::{ChildScope, ChildUpdate, Description, Mapping, Scope, Watch};

    use super::*;
    use crate::generic::describe::check;

    fn deployment_kind() -> Kind {
        Kind::new("apps", "v1", "Deployment")
    }

    fn scope() -> Checked {
        check(Description {
            name: "sample".into(),
            primary: Kind::new("example.com", "v1alpha1", "Foo"),
            primary_fields: vec!["spec".into()],
            watches: vec![Watch {
                kind: deployment_kind(),
                mapping: Mapping::Owner,
                fields: vec!["spec.replicas".into()],
            }],
            scope: Scope {
                finalizers: vec!["example.com/cleanup".into()],
                labels: vec!["example.com/synced".into()],
                status_fields: vec!["availableReplicas".into()],
                children: vec![ChildScope {
                    kind: deployment_kind(),
                    create: true,
                    update: true,
                    delete: true,
                }],
                event_reasons: vec!["Synced".into()],
                ..Scope::default()
            },
        })
        .unwrap()
    }

    fn foo() -> Value {
        json!({
            "apiVersion": "example.com/v1alpha1", "kind": "Foo",
            "metadata": { "namespace": "ns", "name": "foo", "uid": "foo-uid", "resourceVersion": "5",
                          "finalizers": ["example.com/cleanup"], "labels": { "example.com/synced": "yes" } },
            "spec": { "deploymentName": "web", "replicas": 2 },
            "status": { "availableReplicas": 2 }
        })
    }

    fn deployment(name: &str, owner_uid: &str, replicas: i64) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": { "namespace": "ns", "name": name, "uid": format!("{name}-uid"), "resourceVersion": "9",
                          "ownerReferences": [{ "uid": owner_uid, "controller": true }] },
            "spec": { "replicas": replicas }
        })
    }

    fn children(kind: &Kind, name: &str) -> Option<Value> {
        (kind == &deployment_kind()).then_some(())?;
        match name {
            "web" => Some(deployment("web", "foo-uid", 2)),
            "theirs" => Some(deployment("theirs", "other-uid", 1)),
            _ => None,
        }
    }

    fn plan_of(actions: &[Action]) -> Result<Plan, Refusal> {
        // As a list gives it: items carry no apiVersion or kind.
        let mut primary = foo();
        primary.as_object_mut().unwrap().remove("apiVersion");
        primary.as_object_mut().unwrap().remove("kind");
        let seen = Seen {
            key: "ns/foo",
            primary: &primary,
            child: &children,
        };
        plan(&scope(), &seen, actions)
    }

    fn refused(action: Action, reason: &str) {
        let refusal = plan_of(&[action]).expect_err("refused");
        assert_eq!(refusal.key, "ns/foo");
        let text = refusal.to_string();
        assert!(text.starts_with("ns/foo: "), "{text}");
        assert!(text.contains(reason), "{text} does not say {reason:?}");
    }

    #[test]
    fn a_finalizer_it_did_not_declare_is_refused() {
        refused(
            Action::AddFinalizer("example.com/undeclared".into()),
            "add-finalizer example.com/undeclared: finalizer not declared",
        );
    }

    #[test]
    fn a_child_it_does_not_own_is_refused() {
        refused(
            Action::UpdateChild(ChildUpdate {
                kind: deployment_kind(),
                name: "theirs".into(),
                resource_version: "9".into(),
                patch: r#"{"spec":{"replicas":3}}"#.into(),
            }),
            "is not owned by the primary",
        );
        refused(
            Action::DeleteChild(ChildRef {
                kind: deployment_kind(),
                name: "theirs".into(),
                uid: "theirs-uid".into(),
                resource_version: "9".into(),
            }),
            "is not owned by the primary",
        );
        refused(
            Action::CreateChild(
                r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x",
                    "ownerReferences":[{"uid":"someone-else"}]}}"#
                    .into(),
            ),
            "owner references are set by the host",
        );
    }

    #[test]
    fn another_namespace_is_refused() {
        refused(
            Action::CreateChild(
                r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x","namespace":"kube-system"}}"#
                    .into(),
            ),
            "children live in the primary's namespace",
        );
    }

    #[test]
    fn an_undeclared_status_field_is_refused() {
        refused(
            Action::PatchStatus(r#"{"availableReplicas":3,"phase":"Done"}"#.into()),
            r#"status field "phase" not declared"#,
        );
    }

    #[test]
    fn undeclared_kinds_labels_reasons_and_deletes_are_refused() {
        refused(
            Action::CreateChild(
                r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}"#.into(),
            ),
            "creating v1/Secret is not in the module's scope",
        );
        refused(
            Action::SetLabels(vec![KeyValue {
                key: "team".into(),
                value: Some("a".into()),
            }]),
            "label \"team\" not declared",
        );
        refused(
            Action::Event(Event {
                warning: false,
                reason: "Hello".into(),
                message: String::new(),
            }),
            "event reason not declared",
        );
        refused(
            Action::DeletePrimary(PrimaryDeletion {
                resource_version: "5".into(),
                propagation: None,
            }),
            "deleting the primary is not in the module's scope",
        );
        refused(
            Action::UpdateChild(ChildUpdate {
                kind: deployment_kind(),
                name: "web".into(),
                resource_version: "9".into(),
                patch: r#"{"metadata":{"ownerReferences":[]}}"#.into(),
            }),
            "only labels and annotations",
        );
    }

    #[test]
    fn one_refused_action_refuses_the_whole_decision() {
        let refusal = plan_of(&[
            Action::PatchStatus(r#"{"availableReplicas":3}"#.into()),
            Action::AddFinalizer("example.com/other".into()),
        ])
        .unwrap_err();
        assert!(refusal.action.contains("example.com/other"));
    }

    #[test]
    fn a_steady_state_plans_no_write() {
        let plan = plan_of(&[
            Action::AddFinalizer("example.com/cleanup".into()),
            Action::SetLabels(vec![KeyValue {
                key: "example.com/synced".into(),
                value: Some("yes".into()),
            }]),
            Action::PatchStatus(r#"{"availableReplicas":2}"#.into()),
            Action::CreateChild(
                r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}"#.into(),
            ),
            Action::UpdateChild(ChildUpdate {
                kind: deployment_kind(),
                name: "web".into(),
                resource_version: "9".into(),
                patch: r#"{"spec":{"replicas":2}}"#.into(),
            }),
        ])
        .unwrap();
        assert_eq!(plan.writes(), 0, "{plan:?}");
    }

    #[test]
    fn changes_are_planned_with_the_host_setting_namespace_and_owner() {
        let plan = plan_of(&[
            Action::RemoveFinalizer("example.com/cleanup".into()),
            Action::PatchStatus(r#"{"availableReplicas":1}"#.into()),
            Action::CreateChild(
                r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api"},"spec":{"replicas":1}}"#
                    .into(),
            ),
            Action::UpdateChild(ChildUpdate {
                kind: deployment_kind(),
                name: "web".into(),
                resource_version: "9".into(),
                patch: r#"{"spec":{"replicas":4}}"#.into(),
            }),
            Action::RequeueAfter(2000),
            Action::RequeueAfter(500),
        ])
        .unwrap();
        assert_eq!(plan.metadata, Some(json!({ "finalizers": [] })));
        assert_eq!(plan.status, Some(json!({ "availableReplicas": 1 })));
        assert_eq!(plan.requeue_after, Some(Duration::from_millis(500)));
        let ChildWrite::Create { object, .. } = &plan.children[0] else {
            panic!("a create first: {plan:?}")
        };
        assert_eq!(object["metadata"]["namespace"], "ns");
        assert_eq!(object["metadata"]["ownerReferences"][0]["uid"], "foo-uid");
        assert_eq!(
            object["metadata"]["ownerReferences"][0]["apiVersion"], "example.com/v1alpha1",
            "the primary's kind from the description: a listed copy has none"
        );
        assert_eq!(object["metadata"]["ownerReferences"][0]["kind"], "Foo");
        assert_eq!(object["metadata"]["ownerReferences"][0]["controller"], true);
        assert!(matches!(&plan.children[1], ChildWrite::Update { name, .. } if name == "web"));
    }
}
