//! Turning a request body into an object the verbs can store: decoding, defaulting,
//! the create-time status reset, and validation (400 for undecodable bodies, 422 for invalid
//! objects).

use serde_json::{Value, json};

use crate::errors::{ApiError, Cause};
use crate::meta;
use crate::names;
use crate::resources::ResourceInfo;

/// Decodes `body` as an object of `info`'s kind, prunes unknown fields, applies defaults and
/// puts it into `url_namespace`.
pub fn decode(info: &ResourceInfo, body: Value, url_namespace: &str) -> Result<Value, ApiError> {
    let cannot_handle = |detail: String| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {detail}",
            info.kind, info.version, info.kind
        ))
    };
    let Value::Object(mut root) = body else {
        return Err(cannot_handle("the body is not a JSON object".into()));
    };
    if let Some(kind) = root
        .get("kind")
        .and_then(Value::as_str)
        .filter(|k| *k != info.kind)
    {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {}: no kind \"{kind}\" is registered for this resource",
            info.version, info.kind
        )));
    }
    if let Some(api_version) = root.get("apiVersion").and_then(Value::as_str)
        && api_version != info.api_version()
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            info.api_version()
        )));
    }
    root.insert("apiVersion".into(), json!(info.api_version()));
    root.insert("kind".into(), json!(info.kind));
    let mut obj = (info.normalize)(Value::Object(root)).map_err(cannot_handle)?;

    let body_namespace = meta::namespace(&obj).to_string();
    if info.namespaced {
        if body_namespace.is_empty() {
            meta::metadata_mut(&mut obj).insert("namespace".into(), json!(url_namespace));
        } else if body_namespace != url_namespace {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    } else {
        meta::metadata_mut(&mut obj).remove("namespace");
    }
    drop_empty_metadata(&mut obj);
    apply_defaults(info, &mut obj);
    Ok(obj)
}

/// Go's `omitempty`: empty metadata lists and maps are not stored (removing the last
/// finalizer by index leaves no `finalizers: []`).
fn drop_empty_metadata(obj: &mut Value) {
    let meta = meta::metadata_mut(obj);
    for field in [
        "finalizers",
        "labels",
        "annotations",
        "ownerReferences",
        "managedFields",
    ] {
        let empty = match meta.get(field) {
            Some(Value::Array(list)) => list.is_empty(),
            Some(Value::Object(map)) => map.is_empty(),
            Some(Value::Null) => true,
            _ => false,
        };
        if empty {
            meta.remove(field);
        }
    }
}

fn default_field(obj: &mut Value, pointer_parent: &str, field: &str, value: Value) {
    if let Some(Value::Object(parent)) = obj.pointer_mut(pointer_parent) {
        parent.entry(field).or_insert(value);
    }
}

/// The defaults of the API types that selectors and graceful deletion read.
fn apply_defaults(info: &ResourceInfo, obj: &mut Value) {
    if info.custom {
        return;
    }
    match info.kind {
        "CustomResourceDefinition" => crate::crd::definition::apply_defaults(obj),
        "Pod" => {
            if obj.get("spec").is_none() {
                return;
            }
            default_field(obj, "/spec", "restartPolicy", json!("Always"));
            default_field(obj, "/spec", "terminationGracePeriodSeconds", json!(30));
            default_field(obj, "/spec", "dnsPolicy", json!("ClusterFirst"));
            default_field(obj, "/spec", "schedulerName", json!("default-scheduler"));
            default_field(obj, "/spec", "securityContext", json!({}));
            default_field(obj, "/spec", "enableServiceLinks", json!(true));
            // Admission plugins enabled by default: Priority and DefaultTolerationSeconds.
            default_field(obj, "/spec", "priority", json!(0));
            default_field(
                obj,
                "/spec",
                "preemptionPolicy",
                json!("PreemptLowerPriority"),
            );
            default_field(
                obj,
                "/spec",
                "tolerations",
                json!([
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
                ]),
            );
            for list in ["containers", "initContainers"] {
                let count = obj["spec"]
                    .get(list)
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                for i in 0..count {
                    let pointer = format!("/spec/{list}/{i}");
                    let image = obj
                        .pointer(&format!("{pointer}/image"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let pull = if image.ends_with(":latest") || !image.contains(':') {
                        "Always"
                    } else {
                        "IfNotPresent"
                    };
                    default_field(obj, &pointer, "imagePullPolicy", json!(pull));
                    default_field(
                        obj,
                        &pointer,
                        "terminationMessagePath",
                        json!("/dev/termination-log"),
                    );
                    default_field(obj, &pointer, "terminationMessagePolicy", json!("File"));
                    default_field(obj, &pointer, "resources", json!({}));
                }
            }
        }
        "PersistentVolumeClaim" => default_field(obj, "/spec", "volumeMode", json!("Filesystem")),
        "PersistentVolume" => {
            default_field(obj, "/spec", "volumeMode", json!("Filesystem"));
            default_field(
                obj,
                "/spec",
                "persistentVolumeReclaimPolicy",
                json!("Retain"),
            );
        }
        // The defaults controllers read (`kubectl scale`, the generic controller's replicas).
        "Deployment" if info.group == "apps" => {
            default_field(obj, "/spec", "replicas", json!(1));
            default_field(obj, "/spec", "revisionHistoryLimit", json!(10));
            default_field(obj, "/spec", "progressDeadlineSeconds", json!(600));
            default_field(
                obj,
                "/spec",
                "strategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}),
            );
        }
        "ReplicaSet" | "StatefulSet" | "ReplicationController" => {
            default_field(obj, "/spec", "replicas", json!(1));
        }
        "Job" if info.group == "batch" => {
            default_field(obj, "/spec", "backoffLimit", json!(6));
            if obj.pointer("/spec/completions").is_none()
                && obj.pointer("/spec/parallelism").is_none()
            {
                default_field(obj, "/spec", "completions", json!(1));
            }
            default_field(obj, "/spec", "parallelism", json!(1));
        }
        "Namespace" => {
            if obj.get("spec").is_none() {
                obj["spec"] = json!({});
            }
            default_field(obj, "/spec", "finalizers", json!(["kubernetes"]));
        }
        _ => {}
    }
}

/// What each kind's `PrepareForCreate` does to the status a client sent.
pub fn reset_status_on_create(info: &ResourceInfo, obj: &mut Value) {
    if info.kind == "CustomResourceDefinition" && !info.custom {
        crate::crd::definition::reset_status_on_create(obj);
        return;
    }
    let root = obj.as_object_mut().expect("objects are JSON objects");
    match info.kind {
        _ if info.custom && info.has_status => {
            root.remove("status");
        }
        _ if info.custom => {}
        "Pod" => {
            let qos = pod_qos_class(root.get("spec").unwrap_or(&Value::Null));
            root.insert(
                "status".into(),
                json!({"phase": "Pending", "qosClass": qos}),
            );
        }
        "PersistentVolumeClaim" | "PersistentVolume" if info.group.is_empty() => {
            root.insert("status".into(), json!({"phase": "Pending"}));
        }
        // Nodes register with their status (upstream keeps it on create).
        "Node" if info.group.is_empty() => {}
        "Namespace" => {
            root.insert("status".into(), json!({"phase": "Active"}));
        }
        _ if info.has_status => {
            root.remove("status");
        }
        _ => {}
    }
}

/// Kubernetes QoS class from container requests and limits (cpu and memory).
fn pod_qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .flat_map(|list| {
            spec.get(*list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .collect();
    let mut any_set = false;
    let mut guaranteed = true;
    for container in containers {
        let resources = container.get("resources");
        let requests = resources.and_then(|r| r.get("requests"));
        let limits = resources.and_then(|r| r.get("limits"));
        for name in ["cpu", "memory"] {
            let request = requests.and_then(|r| r.get(name));
            let limit = limits.and_then(|l| l.get(name));
            any_set |= request.is_some() || limit.is_some();
            match (request, limit) {
                (_, None) => guaranteed = false,
                (Some(r), Some(l)) if r != l => guaranteed = false,
                _ => {}
            }
        }
    }
    match (any_set, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

/// Validation errors of an object about to be stored (empty when valid).
pub fn validate(info: &ResourceInfo, obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = meta::name(obj);
    if let Some(prefix) = meta::str_field(obj, "generateName").filter(|_| name.is_empty()) {
        let masked = prefix.trim_end_matches('-');
        for message in name_errors(info, masked) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                format!("Invalid value: \"{prefix}\": {message}"),
                Some("metadata.generateName"),
            ));
        }
    }
    if name.is_empty() {
        causes.push(Cause::new(
            "FieldValueRequired",
            "Required value: name or generateName is required",
            Some("metadata.name"),
        ));
    } else {
        for message in name_errors(info, name) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                format!("Invalid value: \"{name}\": {message}"),
                Some("metadata.name"),
            ));
        }
    }
    for (i, finalizer) in meta::finalizers(obj).iter().enumerate() {
        if let Some(message) = finalizer_error(finalizer) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                format!("Invalid value: \"{finalizer}\": {message}"),
                Some(&format!("metadata.finalizers[{i}]")),
            ));
        }
    }
    if info.custom {
        return causes;
    }
    if info.kind == "Pod" {
        validate_pod_spec(obj, &mut causes);
    }
    if info.kind == "CustomResourceDefinition" {
        causes.extend(crate::crd::definition::validate(obj));
    }
    if info.kind == "Event" && info.group == "events.k8s.io" {
        validate_events_v1(obj, &mut causes);
    }
    causes
}

/// Upstream `ValidateEventCreate` for requests in events.k8s.io/v1: the event time is required
/// there (core/v1 Events may leave it out).
fn validate_events_v1(obj: &Value, causes: &mut Vec<Cause>) {
    if obj.get("eventTime").is_none_or(Value::is_null) {
        causes.push(Cause::new(
            "FieldValueRequired",
            "Required value",
            Some("eventTime"),
        ));
    }
}

/// Finalizers are standard names or qualified names (`example.com/name`).
fn finalizer_error(finalizer: &str) -> Option<String> {
    const STANDARD: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];
    if STANDARD.contains(&finalizer) {
        return None;
    }
    let Some((prefix, name)) = finalizer.split_once('/') else {
        return Some("name is neither a standard finalizer name nor is it fully qualified".into());
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !names::subdomain_errors(prefix).is_empty() || !name_ok {
        return Some("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into());
    }
    None
}

fn name_errors(info: &ResourceInfo, name: &str) -> Vec<String> {
    if info.kind == "Namespace" {
        names::label_errors(name)
    } else {
        names::subdomain_errors(name)
    }
}

fn validate_pod_spec(obj: &Value, causes: &mut Vec<Cause>) {
    let containers = obj.pointer("/spec/containers").and_then(Value::as_array);
    match containers {
        None => causes.push(Cause::new(
            "FieldValueRequired",
            "Required value",
            Some("spec.containers"),
        )),
        Some(list) if list.is_empty() => causes.push(Cause::new(
            "FieldValueRequired",
            "Required value",
            Some("spec.containers"),
        )),
        Some(list) => {
            for (i, container) in list.iter().enumerate() {
                for field in ["name", "image"] {
                    if container
                        .get(field)
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        causes.push(Cause::new(
                            "FieldValueRequired",
                            "Required value",
                            Some(&format!("spec.containers[{i}].{field}")),
                        ));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources;

    #[test]
    fn decode_fills_namespace_and_defaults() {
        let pods = resources::pods().info();
        let obj = decode(pods, json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}), "ns").unwrap();
        assert_eq!(obj["metadata"]["namespace"], "ns");
        assert_eq!(obj["kind"], "Pod");
        assert_eq!(obj["spec"]["terminationGracePeriodSeconds"], 30);
        assert_eq!(
            obj["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        let err = decode(
            pods,
            json!({"metadata": {"name": "p", "namespace": "x"}}),
            "ns",
        )
        .unwrap_err();
        assert_eq!(err.code, 400);
        let err = decode(
            pods,
            json!({"metadata": {"name": "p"}, "spec": {"containers": 3}}),
            "ns",
        )
        .unwrap_err();
        assert!(err.message.contains("spec.containers"), "{}", err.message);
    }

    #[test]
    fn qos_classes() {
        assert_eq!(pod_qos_class(&json!({"containers": [{}]})), "BestEffort");
        let g = json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]});
        assert_eq!(pod_qos_class(&g), "Guaranteed");
        let b = json!({"containers": [{"resources": {"requests": {"cpu": "1"}}}]});
        assert_eq!(pod_qos_class(&b), "Burstable");
    }

    #[test]
    fn validation_names_fields() {
        let pods = resources::pods().info();
        let obj = json!({"metadata": {"name": "Bad_Name", "finalizers": ["a", "kubernetes", "example.com/ok", "bad prefix/x"]},
                         "spec": {"containers": []}});
        let causes = validate(pods, &obj);
        let fields: Vec<_> = causes.iter().map(|c| c.field.clone().unwrap()).collect();
        assert_eq!(
            fields,
            vec![
                "metadata.name",
                "metadata.finalizers[0]",
                "metadata.finalizers[3]",
                "spec.containers"
            ]
        );
        assert_eq!(
            causes[1].message,
            "Invalid value: \"a\": name is neither a standard finalizer name nor is it fully qualified"
        );
    }
}
