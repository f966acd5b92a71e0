//! Scripted steps of a simulation: create, update, delete, patch — applied through
//! the API server like any other client would, with discovery resolving the kind.

use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::pinned_kind;
use kube::{Api, Client};
use serde::Deserialize;
use serde_json::Value;

/// One step of a `--script` file.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Step {
    Create(Value),
    Update(Value),
    Delete(DeleteStep),
    Patch(PatchStep),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub namespace: Option<String>,
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteStep {
    #[serde(flatten)]
    pub object: ObjectRef,
    #[serde(default)]
    pub grace_period_seconds: Option<u32>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PatchType {
    Merge,
    Json,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchStep {
    #[serde(flatten)]
    pub object: ObjectRef,
    #[serde(rename = "type")]
    pub patch_type: PatchType,
    pub patch: Value,
    /// Patch the status subresource.
    #[serde(default)]
    pub status: bool,
}

/// Parses a steps file: a YAML list of single-key maps.
pub fn parse_steps(text: &str) -> Result<Vec<Step>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    // Through a JSON value: serde_yaml reads enums as YAML tags, scripts use maps.
    let value: Value = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}

fn object_ref(obj: &Value) -> Result<ObjectRef, String> {
    let field = |pointer: &str| {
        obj.pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    Ok(ObjectRef {
        api_version: field("/apiVersion").ok_or("object has no apiVersion")?,
        kind: field("/kind").ok_or("object has no kind")?,
        namespace: field("/metadata/namespace"),
        name: field("/metadata/name")
            .or_else(|| field("/metadata/generateName"))
            .ok_or("object has no name")?,
    })
}

async fn api_for(client: &Client, object: &ObjectRef) -> Result<Api<DynamicObject>, String> {
    let (group, version) = match object.api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", object.api_version.as_str()),
    };
    let gvk = GroupVersionKind::gvk(group, version, &object.kind);
    let (resource, caps) = pinned_kind(client, &gvk)
        .await
        .map_err(|e| format!("unknown kind {} {}: {e}", object.api_version, object.kind))?;
    Ok(match (&caps.scope, &object.namespace) {
        (kube::discovery::Scope::Namespaced, Some(ns)) => {
            Api::namespaced_with(client.clone(), ns, &resource)
        }
        (kube::discovery::Scope::Namespaced, None) => {
            Api::default_namespaced_with(client.clone(), &resource)
        }
        (kube::discovery::Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
    })
}

impl Step {
    pub fn describe(&self) -> String {
        let (verb, r) = match self {
            Step::Create(v) | Step::Update(v) => (
                if matches!(self, Step::Create(_)) {
                    "create"
                } else {
                    "update"
                },
                object_ref(v).ok(),
            ),
            Step::Delete(d) => ("delete", Some(d.object.clone())),
            Step::Patch(p) => ("patch", Some(p.object.clone())),
        };
        match r {
            Some(r) => format!(
                "{verb} {} {}/{}",
                r.kind,
                r.namespace.unwrap_or_default(),
                r.name
            ),
            None => verb.to_string(),
        }
    }

    pub async fn apply(&self, client: &Client) -> Result<(), String> {
        match self {
            Step::Create(obj) => {
                let api = api_for(client, &object_ref(obj)?).await?;
                let obj: DynamicObject =
                    serde_json::from_value(obj.clone()).map_err(|e| e.to_string())?;
                api.create(&PostParams::default(), &obj)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Step::Update(obj) => {
                let r = object_ref(obj)?;
                let api = api_for(client, &r).await?;
                let mut obj: DynamicObject =
                    serde_json::from_value(obj.clone()).map_err(|e| e.to_string())?;
                if obj.metadata.resource_version.is_none() {
                    // A script states the desired object; take the live version for it.
                    let live = api.get(&r.name).await.map_err(|e| e.to_string())?;
                    obj.metadata.resource_version = live.metadata.resource_version;
                }
                api.replace(&r.name, &PostParams::default(), &obj)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Step::Delete(d) => {
                let api = api_for(client, &d.object).await?;
                let params = DeleteParams {
                    grace_period_seconds: d.grace_period_seconds,
                    ..DeleteParams::default()
                };
                api.delete(&d.object.name, &params)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Step::Patch(p) => {
                let api = api_for(client, &p.object).await?;
                let params = PatchParams::default();
                let patch = match p.patch_type {
                    PatchType::Merge => Patch::Merge(p.patch.clone()),
                    PatchType::Json => Patch::Json(
                        serde_json::from_value(p.patch.clone()).map_err(|e| e.to_string())?,
                    ),
                };
                let result = if p.status {
                    api.patch_status(&p.object.name, &params, &patch).await
                } else {
                    api.patch(&p.object.name, &params, &patch).await
                };
                result.map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_parse_from_yaml() {
        let steps = parse_steps(
            r#"
- create: {apiVersion: v1, kind: Pod, metadata: {namespace: ns, name: a}}
- delete: {apiVersion: v1, kind: Pod, namespace: ns, name: a, gracePeriodSeconds: 0}
- patch: {apiVersion: v1, kind: PersistentVolumeClaim, namespace: ns, name: p, type: merge, patch: {metadata: {labels: {a: b}}}}
"#,
        )
        .unwrap();
        assert_eq!(steps.len(), 3);
        assert!(
            matches!(&steps[1], Step::Delete(d) if d.grace_period_seconds == Some(0) && d.object.name == "a")
        );
        assert!(matches!(&steps[2], Step::Patch(p) if p.patch_type == PatchType::Merge));
        assert_eq!(steps[0].describe(), "create Pod ns/a");
    }

    #[test]
    fn a_bad_step_is_a_clear_error() {
        let err = parse_steps("- explode: {}").unwrap_err();
        assert!(err.contains("explode"), "{err}");
    }
}
