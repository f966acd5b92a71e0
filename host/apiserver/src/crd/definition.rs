//! A CustomResourceDefinition read as what it serves: one [`ServedVersion`] per served
//! version, the validation the real server applies to the CRD itself, and the status its
//! controllers write (accepted names, `NamesAccepted`, `Established`).

use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use serde_json::{Value, json};

use super::schema::Schema;
use crate::errors::Cause;
use crate::meta;
use crate::names;
use crate::resources::{ResourceId, custom};

/// The finalizer a CRD gets when it is deleted; removed once its objects are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// One version of a custom resource as one server serves it.
#[derive(Debug, Clone)]
pub struct ServedVersion {
    pub resource: ResourceId,
    /// `<plural>.<group>`.
    pub crd_name: String,
    pub schema: Option<Arc<Schema>>,
    /// The printer columns (`Age` when the version declares none, as upstream).
    pub columns: Vec<CustomResourceColumnDefinition>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// The CRD is being deleted: reads go on, creates are refused.
    pub terminating: bool,
    /// The storage version of the CRD.
    pub storage: bool,
}

/// Upstream `serveDefaultColumnsIfEmpty`.
fn default_columns() -> Vec<CustomResourceColumnDefinition> {
    vec![CustomResourceColumnDefinition {
        name: "Age".into(),
        type_: "date".into(),
        json_path: ".metadata.creationTimestamp".into(),
        description: Some(super::table::CREATION_TIMESTAMP_DESCRIPTION.into()),
        ..Default::default()
    }]
}

/// The versions a stored CRD serves (none when it does not parse).
pub fn served_versions(stored: &Value) -> Vec<ServedVersion> {
    let Ok(crd) = serde_json::from_value::<CustomResourceDefinition>(stored.clone()) else {
        return Vec::new();
    };
    let spec = &crd.spec;
    let names = &spec.names;
    let singular = names
        .singular
        .clone()
        .unwrap_or_else(|| names.kind.to_lowercase());
    let has_status = |v: &CustomResourceDefinitionVersion| {
        v.subresources.as_ref().is_some_and(|s| s.status.is_some())
    };
    spec.versions
        .iter()
        .filter(|v| v.served)
        .map(|v| {
            let resource = custom::intern(&custom::Identity {
                group: spec.group.clone(),
                version: v.name.clone(),
                kind: names.kind.clone(),
                plural: names.plural.clone(),
                singular: singular.clone(),
                namespaced: spec.scope == "Namespaced",
                has_status: has_status(v),
            });
            let columns = v
                .additional_printer_columns
                .clone()
                .filter(|c| !c.is_empty())
                .unwrap_or_else(default_columns);
            ServedVersion {
                resource,
                crd_name: meta::name(stored).to_string(),
                schema: v
                    .schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.clone())
                    .map(|s| Arc::new(Schema::new(s))),
                columns,
                short_names: names.short_names.clone().unwrap_or_default(),
                categories: names.categories.clone().unwrap_or_default(),
                terminating: meta::is_deleting(stored),
                storage: v.storage,
            }
        })
        .collect()
}

/// CRD defaults of v1 (`SetDefaults_CustomResourceDefinitionSpec`).
pub fn apply_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    spec.entry("conversion")
        .or_insert_with(|| json!({"strategy": "None"}));
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !kind.is_empty() {
            names
                .entry("singular")
                .or_insert_with(|| json!(kind.to_lowercase()));
            names
                .entry("listKind")
                .or_insert_with(|| json!(format!("{kind}List")));
        }
    }
}

/// What `PrepareForCreate` leaves of the status: the storage version only.
pub fn reset_status_on_create(obj: &mut Value) {
    let storage: Vec<Value> = obj
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["storage"] == true)
        .map(|v| v["name"].clone())
        .take(1)
        .collect();
    obj["status"] = json!({
        "conditions": null,
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": storage,
    });
}

fn required(field: &str) -> Cause {
    Cause::new("FieldValueRequired", "Required value", Some(field))
}

/// Upstream `ValidateCustomResourceDefinition`, the checks a hand-written CRD meets most.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = &obj["spec"];
    let group = spec["group"].as_str().unwrap_or("");
    let plural = spec
        .pointer("/names/plural")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = spec
        .pointer("/names/kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = meta::name(obj);
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        causes.push(Cause::new(
            "FieldValueInvalid",
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
            Some("metadata.name"),
        ));
    }
    if group.is_empty() {
        causes.push(required("spec.group"));
    } else if !group.contains('.') {
        causes.push(Cause::new(
            "FieldValueInvalid",
            format!("Invalid value: {group:?}: should be a domain with at least one dot"),
            Some("spec.group"),
        ));
    }
    match spec["scope"].as_str().unwrap_or("") {
        "" => causes.push(required("spec.scope")),
        "Namespaced" | "Cluster" => {}
        other => causes.push(Cause::new(
            "FieldValueNotSupported",
            format!("Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""),
            Some("spec.scope"),
        )),
    }
    if plural.is_empty() {
        causes.push(required("spec.names.plural"));
    } else if !names::label_errors(plural).is_empty() {
        causes.push(Cause::new(
            "FieldValueInvalid",
            format!("Invalid value: {plural:?}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
            Some("spec.names.plural"),
        ));
    }
    if kind.is_empty() {
        causes.push(required("spec.names.kind"));
    }
    let versions = spec["versions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if versions.is_empty() {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "Invalid value: \"null\": must have exactly one version marked as storage version",
            Some("spec.versions"),
        ));
        return causes;
    }
    let storage = versions.iter().filter(|v| v["storage"] == true).count();
    if storage != 1 {
        causes.push(Cause::new(
            "FieldValueInvalid",
            format!(
                "Invalid value: {:?}: must have exactly one version marked as storage version",
                "[]apiextensions.CustomResourceDefinitionVersion"
            ),
            Some("spec.versions"),
        ));
    }
    for (i, version) in versions.iter().enumerate() {
        if version.pointer("/schema/openAPIV3Schema").is_none() {
            causes.push(required(&format!(
                "spec.versions[{i}].schema.openAPIV3Schema"
            )));
        } else if version.pointer("/schema/openAPIV3Schema/type") != Some(&json!("object")) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                "Invalid value: \"\": must be object at the root",
                Some(&format!("spec.versions[{i}].schema.openAPIV3Schema.type")),
            ));
        }
    }
    causes
}

fn condition(kind: &str, reason: &str, message: &str, since: &str) -> Value {
    json!({"type": kind, "status": "True", "lastTransitionTime": since, "reason": reason, "message": message})
}

/// The status the naming and establishing controllers converge a CRD to; None when it
/// already has it.
pub fn converged_status(stored: &Value, now: &str) -> Option<Value> {
    let names = stored.pointer("/spec/names")?;
    let mut status = stored.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut accepted = json!({"plural": names["plural"], "kind": names["kind"]});
    for field in ["singular", "shortNames", "listKind", "categories"] {
        if let Some(value) = names.get(field) {
            accepted[field] = value.clone();
        }
    }
    status["acceptedNames"] = accepted;
    let existing: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
    let since = |kind: &str| {
        existing
            .iter()
            .find(|c| c["type"] == kind && c["status"] == "True")
            .and_then(|c| c["lastTransitionTime"].as_str())
            .unwrap_or(now)
            .to_string()
    };
    let mut conditions = vec![
        condition(
            "NamesAccepted",
            "NoConflicts",
            "no conflicts found",
            &since("NamesAccepted"),
        ),
        condition(
            "Established",
            "InitialNamesAccepted",
            "the initial names have been accepted",
            &since("Established"),
        ),
    ];
    conditions.extend(
        existing
            .iter()
            .filter(|c| c["type"] != "NamesAccepted" && c["type"] != "Established")
            .cloned(),
    );
    status["conditions"] = Value::Array(conditions);
    let mut stored_versions: Vec<Value> = status["storedVersions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for version in stored
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if version["storage"] == true && !stored_versions.contains(&version["name"]) {
            stored_versions.push(version["name"].clone());
        }
    }
    status["storedVersions"] = Value::Array(stored_versions);
    (stored.get("status") != Some(&status)).then_some(status)
}

/// What a DELETE of a CRD adds before the usual finalizer handling: the cleanup finalizer and
/// the `Terminating` condition (upstream's CRD `REST.Delete`).
pub fn mark_terminating(obj: &mut Value, now: &str) {
    let mut finalizers = meta::finalizers(obj);
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        finalizers.push(CLEANUP_FINALIZER.to_string());
        meta::set_finalizers(obj, &finalizers);
    }
    let terminating = json!({
        "type": "Terminating", "status": "True", "lastTransitionTime": now,
        "reason": "InstanceDeletionPending",
        "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
    });
    let status = obj
        .as_object_mut()
        .expect("objects are JSON objects")
        .entry("status")
        .or_insert_with(|| json!({}));
    let conditions = status
        .as_object_mut()
        .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
    if let Some(Value::Array(list)) = conditions {
        list.retain(|c| c["type"] != "Terminating");
        list.push(terminating);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn widget_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]
            }
        })
    }

    #[test]
    fn a_crd_serves_its_versions_with_default_columns() {
        let mut crd = widget_crd();
        apply_defaults(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "widget");
        let served = served_versions(&crd);
        assert_eq!(served.len(), 1);
        let info = served[0].resource.info();
        assert_eq!(
            (
                info.group,
                info.version,
                info.plural,
                info.kind,
                info.namespaced,
                info.has_status
            ),
            ("example.com", "v1", "widgets", "Widget", true, true)
        );
        assert_eq!(served[0].columns[0].name, "Age");
        assert_eq!(served[0].short_names, vec!["wd"]);
        assert!(validate(&crd).is_empty(), "{:?}", validate(&crd));
    }

    #[test]
    fn a_crd_named_unlike_its_plural_and_group_is_invalid() {
        let mut crd = widget_crd();
        crd["metadata"]["name"] = json!("gadgets.example.com");
        crd["spec"]["versions"][0]["storage"] = json!(false);
        let fields: Vec<String> = validate(&crd).into_iter().filter_map(|c| c.field).collect();
        assert_eq!(fields, vec!["metadata.name", "spec.versions"]);
    }

    #[test]
    fn the_converged_status_accepts_the_names_and_keeps_transition_times() {
        let mut crd = widget_crd();
        reset_status_on_create(&mut crd);
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
        let status = converged_status(&crd, "2026-01-01T00:00:00Z").unwrap();
        assert_eq!(status["acceptedNames"]["plural"], "widgets");
        assert_eq!(status["conditions"][1]["type"], "Established");
        crd["status"] = status;
        assert!(converged_status(&crd, "2027-01-01T00:00:00Z").is_none());
    }
}
