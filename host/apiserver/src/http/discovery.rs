//! Discovery documents: enough for kubectl and kube's `Discovery` (issue item 2).
//!
//! Aggregated discovery (`apidiscovery.k8s.io/v2`) is not served: clients that ask for it get
//! the legacy documents with `Content-Type: application/json` and fall back to them.

use serde_json::{Value, json};

use crate::crd::CustomResources;
use crate::resources::ResourceId;

const STATUS_VERBS: &[&str] = &["get", "patch", "update"];

pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "35",
        "gitVersion": concat!("v1.35.0+rekon-", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "none (rekon embedded API server)",
        "compiler": "rustc",
        "platform": "linux/amd64"
    })
}

pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

fn group_document(group: &str, custom: &CustomResources) -> Value {
    let versions: Vec<Value> = custom
        .all_group_versions()
        .into_iter()
        .filter(|(g, _)| *g == group)
        .map(|(g, v)| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
        .collect();
    json!({"name": group, "versions": versions, "preferredVersion": versions[0]})
}

pub fn group_list(custom: &CustomResources) -> Value {
    let mut groups: Vec<&str> = Vec::new();
    for (group, _) in custom.all_group_versions() {
        if !group.is_empty() && !groups.contains(&group) {
            groups.push(group);
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|g| group_document(g, custom))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn group(group: &str, custom: &CustomResources) -> Option<Value> {
    if group.is_empty() || !custom.all_group_versions().iter().any(|(g, _)| *g == group) {
        return None;
    }
    let mut doc = group_document(group, custom);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

fn resource_entry(id: ResourceId, custom: &CustomResources) -> Vec<Value> {
    let info = id.info();
    let mut main = json!({
        "name": info.plural,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": info.verbs,
    });
    if !info.short_names.is_empty() {
        main["shortNames"] = json!(info.short_names);
    }
    if !info.categories.is_empty() {
        main["categories"] = json!(info.categories);
    }
    if let Some(version) = custom.get(id) {
        if !version.short_names.is_empty() {
            main["shortNames"] = json!(version.short_names);
        }
        if !version.categories.is_empty() {
            main["categories"] = json!(version.categories);
        }
    }
    let mut entries = vec![main];
    if info.has_status {
        entries.push(json!({
            "name": format!("{}/status", info.plural),
            "singularName": "",
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": STATUS_VERBS,
        }));
    }
    if info.has_scale {
        entries.push(json!({
            "name": format!("{}/scale", info.plural),
            "singularName": "",
            "namespaced": info.namespaced,
            "group": "autoscaling",
            "version": "v1",
            "kind": "Scale",
            "verbs": STATUS_VERBS,
        }));
    }
    entries
}

pub fn resource_list(group: &str, version: &str, custom: &CustomResources) -> Option<Value> {
    let ids: Vec<ResourceId> = custom
        .all_resources()
        .into_iter()
        .filter(|id| id.info().group == group && id.info().version == version)
        .collect();
    if ids.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let entries: Vec<Value> = ids
        .into_iter()
        .flat_map(|id| resource_entry(id, custom))
        .collect();
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": entries,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_list_has_pods_with_short_name_and_status() {
        let none = CustomResources::default();
        let list = resource_list("", "v1", &none).unwrap();
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"pods") && names.contains(&"pods/status"));
        let pods = &list["resources"][names.iter().position(|n| *n == "pods").unwrap()];
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert!(resource_list("nope", "v1", &none).is_none());
        let groups = group_list(&none);
        assert!(
            groups["groups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["name"] == "resource.k8s.io")
        );
    }
}
