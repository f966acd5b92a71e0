//! A minimal OpenAPI v3 surface: one document per group-version that lists, for every kind, the
//! PATCH operation with the `fieldValidation` query parameter. That is what kubectl reads to
//! decide that the server validates fields itself (`--validate=strict`, the default); without
//! it kubectl falls back to client-side validation and needs the full `/openapi/v2` schema,
//! which this server does not serve. Schemas are not served (`kubectl explain` does not work).

use serde_json::{Map, Value, json};

use crate::crd::CustomResources;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: the group-versions and where their documents are.
pub fn root(custom: &CustomResources) -> Value {
    let mut paths = Map::new();
    for (group, version) in custom.all_group_versions() {
        let path = gv_path(group, version);
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", env!("CARGO_PKG_VERSION"))}),
        );
    }
    json!({"paths": paths})
}

/// `/openapi/v3/<gv path>`: the PATCH operations of each kind of that group-version.
pub fn group_version(path: &str, custom: &CustomResources) -> Option<Value> {
    let (group, version) = custom
        .all_group_versions()
        .into_iter()
        .find(|(g, v)| gv_path(g, v) == path)?;
    let mut paths = Map::new();
    for id in custom
        .all_resources()
        .into_iter()
        .filter(|id| id.info().group == group && id.info().version == version)
    {
        let info = id.info();
        let item = if info.namespaced {
            format!("/{path}/namespaces/{{namespace}}/{}/{{name}}", info.plural)
        } else {
            format!("/{path}/{}/{{name}}", info.plural)
        };
        paths.insert(
            item,
            json!({"patch": {
                "operationId": format!("patch{}", info.kind),
                "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": info.kind},
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}}
                ],
                "responses": {"200": {"description": "OK"}}
            }}),
        );
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (rekon embedded)", "version": "v1.35.0"},
        "paths": paths,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_name_every_kind_with_field_validation() {
        let none = CustomResources::default();
        let root = root(&none);
        assert!(
            root["paths"]["apis/coordination.k8s.io/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/apis/coordination.k8s.io/v1?hash=")
        );
        let core = group_version("api/v1", &none).unwrap();
        let pods = &core["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(pods["x-kubernetes-group-version-kind"]["kind"], "Pod");
        assert_eq!(pods["parameters"][0]["name"], "fieldValidation");
        assert!(group_version("apis/nope/v1", &none).is_none());
    }
}
