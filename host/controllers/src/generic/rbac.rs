//! Least privilege derived from a module's description: the ClusterRole rules
//! a controller module needs (`rekon rbac MODULE`), so RBAC is read off the
//! scope rather than written by hand. rekon watches every namespace, hence a
//! ClusterRole; the binding names rekon's ServiceAccount.

use std::collections::{BTreeMap, BTreeSet};

use rekon_contract::controller::{Description, Kind};
use serde_json::{Value, json};

/// The plural resource name of a kind (`Deployment` → `deployments`).
pub type Plural<'a> = &'a dyn Fn(&Kind) -> String;

/// The rules, one per (group, resource), verbs sorted.
pub fn rules(description: &Description, plural: Plural<'_>) -> Vec<Value> {
    let mut verbs: BTreeMap<(String, String), BTreeSet<&str>> = BTreeMap::new();
    let mut grant = |kind: &Kind, resource: String, add: &[&'static str]| {
        verbs
            .entry((kind.group.clone(), resource))
            .or_default()
            .extend(add);
    };
    let primary = &description.primary;
    let scope = &description.scope;
    grant(primary, plural(primary), &["get", "list", "watch"]);
    if !scope.finalizers.is_empty() || !scope.labels.is_empty() || !scope.annotations.is_empty() {
        grant(primary, plural(primary), &["patch"]);
    }
    if !scope.status_fields.is_empty() {
        // A kind without the subresource takes its status in a main patch.
        grant(primary, format!("{}/status", plural(primary)), &["patch"]);
        grant(primary, plural(primary), &["patch"]);
    }
    if scope.delete_primary {
        grant(primary, plural(primary), &["delete"]);
    }
    for watch in &description.watches {
        grant(&watch.kind, plural(&watch.kind), &["get", "list", "watch"]);
    }
    for child in &scope.children {
        let resource = plural(&child.kind);
        if child.create {
            grant(&child.kind, resource.clone(), &["create"]);
        }
        if child.update {
            grant(&child.kind, resource.clone(), &["patch"]);
        }
        if child.delete {
            grant(&child.kind, resource, &["delete"]);
        }
    }
    for read in &scope.reads {
        grant(&read.kind, plural(&read.kind), &["get", "list"]);
    }
    if !scope.event_reasons.is_empty() {
        let events = Kind::new("events.k8s.io", "v1", "Event");
        grant(&events, "events".into(), &["create", "patch"]);
    }
    verbs
        .into_iter()
        .map(|((group, resource), verbs)| {
            json!({ "apiGroups": [group], "resources": [resource], "verbs": verbs })
        })
        .collect()
}

/// The ClusterRole and its binding to rekon's ServiceAccount, as a List.
pub fn manifests(description: &Description, plural: Plural<'_>, namespace: &str) -> Value {
    let name = format!("rekon-module-{}", description.name);
    let labels =
        json!({ "app.kubernetes.io/name": "rekon", "rekon.dev/controller": description.name });
    json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": { "name": name, "labels": labels },
                "rules": rules(description, plural),
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": { "name": name, "labels": labels },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name },
                "subjects": [{ "kind": "ServiceAccount", "name": "rekon", "namespace": namespace }],
            }
        ]
    })
}

#[cfg(test)]
mod tests {
    use rekon_contract::controller::{ChildScope, Mapping, ReadScope, Scope, Watch};

    use super::*;

    fn plural(kind: &Kind) -> String {
        format!("{}s", kind.kind.to_lowercase())
    }

    #[test]
    fn rules_follow_the_scope_and_nothing_more() {
        let deployment = Kind::new("apps", "v1", "Deployment");
        let description = Description {
            name: "sample".into(),
            primary: Kind::new("example.com", "v1alpha1", "Foo"),
            watches: vec![Watch {
                kind: deployment.clone(),
                mapping: Mapping::Owner,
                fields: vec![],
            }],
            scope: Scope {
                status_fields: vec!["availableReplicas".into()],
                children: vec![ChildScope {
                    kind: deployment,
                    create: true,
                    update: true,
                    delete: false,
                }],
                event_reasons: vec!["Synced".into()],
                reads: vec![ReadScope {
                    kind: Kind::new("", "v1", "Pod"),
                    fields: vec![],
                    ..Default::default()
                }],
                ..Scope::default()
            },
            ..Description::default()
        };
        let rules = rules(&description, &plural);
        let find = |group: &str, resource: &str| {
            rules
                .iter()
                .find(|r| r["apiGroups"][0] == group && r["resources"][0] == resource)
                .map(|r| r["verbs"].clone())
        };
        assert_eq!(
            find("apps", "deployments"),
            Some(json!(["create", "get", "list", "patch", "watch"]))
        );
        assert_eq!(
            find("example.com", "foos"),
            Some(json!(["get", "list", "patch", "watch"]))
        );
        assert_eq!(find("example.com", "foos/status"), Some(json!(["patch"])));
        assert_eq!(find("", "pods"), Some(json!(["get", "list"])));
        assert_eq!(
            find("events.k8s.io", "events"),
            Some(json!(["create", "patch"]))
        );
        assert!(
            !rules
                .iter()
                .any(|r| r["verbs"].as_array().unwrap().contains(&json!("delete")))
        );
    }
}
