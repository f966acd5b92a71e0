//! The controller, as plain functions on the world's types ([`crate::world`]).
//!
//! An App (`example.com/v1alpha1`, `crd.yaml`) owns a Deployment of its name
//! running `spec.image` with `spec.replicas`; the Deployment follows the App;
//! the App's `status.availableReplicas` copies the Deployment's; an Event
//! `Synced` records a sync that wrote something, so a steady state writes
//! nothing. The shape of Kubernetes' canonical sample controller: a custom
//! resource owning a Deployment.

use serde_json::{Value, json};

use crate::world::{
    Action, ChildScope, ChildUpdate, Decision, Description, Event, Input, Kind, Mapping, Scope,
    Watch,
};

/// The Event reason of a sync that wrote something.
pub const SYNCED: &str = "Synced";
const SYNCED_MESSAGE: &str = "App synced successfully";
/// The Deployment's one container.
const CONTAINER: &str = "app";

pub fn app_kind() -> Kind {
    kind("example.com", "v1alpha1", "App")
}

pub fn deployment_kind() -> Kind {
    kind("apps", "v1", "Deployment")
}

fn kind(group: &str, version: &str, kind: &str) -> Kind {
    Kind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// What the controller watches, sees and may write: the host enforces it.
pub fn describe() -> Description {
    Description {
        name: "{{controller}}".into(),
        primary: app_kind(),
        primary_fields: strings(&["spec.image", "spec.replicas", "status.availableReplicas"]),
        // Watch 0: the Deployments the App owns (`input.related[0]`).
        watches: vec![Watch {
            kind: deployment_kind(),
            mapping: Mapping::Owner,
            fields: strings(&[
                "spec.replicas",
                "spec.template.spec.containers[*].image",
                "status.availableReplicas",
            ]),
        }],
        scope: Scope {
            finalizers: Vec::new(),
            labels: Vec::new(),
            annotations: Vec::new(),
            status_fields: strings(&["availableReplicas"]),
            delete_primary: false,
            children: vec![ChildScope {
                kind: deployment_kind(),
                create: true,
                update: true,
                delete: false,
            }],
            event_reasons: strings(&[SYNCED]),
            reads: Vec::new(),
        },
    }
}

/// What to do for one App.
pub fn decide(input: &Input) -> Decision {
    let Ok(app) = serde_json::from_str::<Value>(&input.primary) else {
        return Decision::Actions(Vec::new());
    };
    let Some(image) = app.pointer("/spec/image").and_then(Value::as_str) else {
        return Decision::Actions(Vec::new());
    };
    let name = text(&app, "/metadata/name");
    let replicas = app.pointer("/spec/replicas").and_then(Value::as_i64);
    let deployment = input
        .related
        .first()
        .into_iter()
        .flat_map(|related| &related.objects)
        .filter_map(|object| serde_json::from_str::<Value>(object).ok())
        .find(|deployment| text(deployment, "/metadata/name") == name);

    let mut writes = Vec::new();
    let available = match &deployment {
        None => {
            let object = new_deployment(name, image, replicas);
            writes.push(Action::CreateChild(object.to_string()));
            0
        }
        Some(deployment) => {
            let replicas_differ = replicas.is_some_and(|r| {
                deployment.pointer("/spec/replicas").and_then(Value::as_i64) != Some(r)
            });
            let image_differs = deployment
                .pointer("/spec/template/spec/containers/0/image")
                .and_then(Value::as_str)
                != Some(image);
            if replicas_differ || image_differs {
                writes.push(Action::UpdateChild(ChildUpdate {
                    kind: deployment_kind(),
                    name: name.into(),
                    resource_version: text(deployment, "/metadata/resourceVersion").into(),
                    patch: json!({ "spec": owned_spec(image, replicas) }).to_string(),
                }));
            }
            deployment
                .pointer("/status/availableReplicas")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        }
    };
    if app
        .pointer("/status/availableReplicas")
        .and_then(Value::as_i64)
        != Some(available)
    {
        let status = json!({ "availableReplicas": available });
        writes.push(Action::PatchStatus(status.to_string()));
    }
    if !writes.is_empty() {
        writes.push(Action::Event(Event {
            warning: false,
            reason: SYNCED.into(),
            message: SYNCED_MESSAGE.into(),
        }));
    }
    Decision::Actions(writes)
}

/// The string at a JSON pointer, or "".
fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The pod spec of the Deployment: one container running the App's image.
fn pod_spec(image: &str) -> Value {
    json!({ "containers": [{ "name": CONTAINER, "image": image }] })
}

/// The Deployment's spec as the App decides it (replicas only when the App sets them).
fn owned_spec(image: &str, replicas: Option<i64>) -> Value {
    let mut spec = json!({ "template": { "spec": pod_spec(image) } });
    if let Some(replicas) = replicas {
        spec["replicas"] = replicas.into();
    }
    spec
}

/// The App's Deployment; the host sets its namespace and the App as its controller owner.
fn new_deployment(name: &str, image: &str, replicas: Option<i64>) -> Value {
    let labels = json!({ "app": name });
    let mut spec = owned_spec(image, replicas);
    spec["selector"] = json!({ "matchLabels": labels });
    spec["template"]["metadata"] = json!({ "labels": labels });
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": name, "labels": labels },
        "spec": spec,
    })
}

#[cfg(test)]
mod tests {
    //! The decision, natively; `cases/` runs the same through the component
    //! (`rekon test`).

    use super::*;
    use crate::world::Related;

    fn input(app: Value, deployments: &[Value]) -> Input {
        Input {
            primary: app.to_string(),
            related: vec![Related {
                kind: deployment_kind(),
                objects: deployments.iter().map(Value::to_string).collect(),
            }],
            reads: Vec::new(),
            now: "2026-11-26T00:00:00Z".into(),
        }
    }

    fn app(image: &str, replicas: i64, available: i64) -> Value {
        json!({
            "metadata": { "namespace": "demo", "name": "web", "uid": "a1", "resourceVersion": "4" },
            "spec": { "image": image, "replicas": replicas },
            "status": { "availableReplicas": available },
        })
    }

    fn deployment(image: &str, replicas: i64, available: i64) -> Value {
        json!({
            "metadata": { "namespace": "demo", "name": "web", "uid": "d1", "resourceVersion": "7" },
            "spec": { "replicas": replicas, "template": { "spec": { "containers": [{ "image": image }] } } },
            "status": { "availableReplicas": available },
        })
    }

    fn actions(decision: Decision) -> Vec<Action> {
        match decision {
            Decision::Actions(actions) => actions,
            Decision::Read(_) => panic!("the controller reads nothing live"),
        }
    }

    #[test]
    fn a_new_app_gets_its_deployment_then_nothing_once_in_step() {
        let created = actions(decide(&input(app("nginx:1.27", 2, 0), &[])));
        let Some(Action::CreateChild(object)) = created.first() else {
            panic!("{created:?}");
        };
        let object: Value = serde_json::from_str(object).unwrap();
        assert_eq!(object["metadata"]["name"], "web");
        assert_eq!(object["spec"]["replicas"], 2);
        assert_eq!(
            object["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx:1.27"
        );
        assert!(matches!(created.last(), Some(Action::Event(e)) if e.reason == SYNCED));

        let steady = input(app("nginx:1.27", 2, 2), &[deployment("nginx:1.27", 2, 2)]);
        assert_eq!(decide(&steady), Decision::Actions(Vec::new()));
    }

    #[test]
    fn the_deployment_follows_the_app_and_the_status_follows_the_deployment() {
        let scaled = actions(decide(&input(
            app("nginx:1.27", 3, 2),
            &[deployment("nginx:1.27", 2, 2)],
        )));
        let Some(Action::UpdateChild(update)) = scaled.first() else {
            panic!("{scaled:?}");
        };
        assert_eq!(update.resource_version, "7", "conditional on what was seen");
        let patch: Value = serde_json::from_str(&update.patch).unwrap();
        assert_eq!(patch["spec"]["replicas"], 3);

        let available = actions(decide(&input(
            app("nginx:1.27", 2, 0),
            &[deployment("nginx:1.27", 2, 1)],
        )));
        assert_eq!(
            available[0],
            Action::PatchStatus(r#"{"availableReplicas":1}"#.into())
        );
    }

    #[test]
    fn describes_what_decide_writes() {
        let description = describe();
        assert_eq!(description.scope.status_fields, ["availableReplicas"]);
        assert_eq!(description.scope.children[0].kind, deployment_kind());
        assert_eq!(description.scope.event_reasons, [SYNCED]);
    }
}
