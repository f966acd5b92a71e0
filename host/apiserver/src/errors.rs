//! `metav1.Status` errors as the real API server writes them (semantics row 24).
//!
//! Every failed request is answered with a Status object; the builders here reproduce the
//! upstream messages (`k8s.io/apimachinery/pkg/api/errors`) because clients classify errors by
//! code and reason, and the differential tests compare messages.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::resources::{ResourceInfo, qualify};

/// One entry of `details.causes`.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    pub reason: String,
    pub message: String,
    pub field: Option<String>,
}

impl Cause {
    pub fn new(reason: &str, message: impl Into<String>, field: Option<&str>) -> Self {
        Cause {
            reason: reason.to_string(),
            message: message.into(),
            field: field.map(str::to_string),
        }
    }
}

/// A failed API request, rendered as a `metav1.Status`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: u16,
    /// Empty for errors upstream reports with `StatusReasonUnknown`.
    pub reason: &'static str,
    pub message: String,
    /// Boxed: errors travel through many `Result`s and should stay small.
    pub details: Box<Details>,
}

/// `details` of a Status.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Details {
    pub name: Option<String>,
    pub group: Option<String>,
    pub kind: Option<String>,
    pub causes: Vec<Cause>,
    pub retry_after_seconds: Option<u64>,
    /// Render `details: {}` even when empty (upstream's generic 422 for patch failures).
    pub render_empty: bool,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: Box::default(),
        }
    }

    pub fn causes(&self) -> &[Cause] {
        &self.details.causes
    }

    /// Details naming the object by its resource ("pods"), as NotFound/Conflict do.
    fn for_resource(mut self, res: &ResourceInfo, name: &str) -> Self {
        self.details.name = Some(name.to_string());
        self.details.group = Some(res.group.to_string());
        self.details.kind = Some(res.plural.to_string());
        self
    }

    /// Details naming the object by its Kind ("Pod"), as Invalid and delete preconditions do.
    fn for_kind(mut self, res: &ResourceInfo, name: &str) -> Self {
        self.details.name = Some(name.to_string());
        self.details.group = Some(res.group.to_string());
        self.details.kind = Some(res.kind.to_string());
        self
    }

    pub fn not_found(res: &ResourceInfo, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", res.qualified()),
        )
        .for_resource(res, name)
    }

    pub fn namespace_not_found(namespace: &str) -> Self {
        let mut err = Self::new(
            404,
            "NotFound",
            format!("namespaces \"{namespace}\" not found"),
        );
        err.details.name = Some(namespace.to_string());
        err.details.kind = Some("namespaces".to_string());
        err
    }

    pub fn namespace_terminating(res: &ResourceInfo, name: &str, namespace: &str) -> Self {
        let mut err = Self::new(
            403,
            "Forbidden",
            format!(
                "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                res.qualified()
            ),
        )
        .for_resource(res, name);
        err.details.causes.push(Cause::new(
            "NamespaceTerminating",
            format!("namespace {namespace} is being terminated"),
            Some("metadata.namespace"),
        ));
        err
    }

    pub fn already_exists(res: &ResourceInfo, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", res.qualified()),
        )
        .for_resource(res, name)
    }

    /// The optimistic-concurrency conflict of an update or a conditional patch (row 2).
    pub fn conflict_modified(res: &ResourceInfo, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                res.qualified()
            ),
        )
        .for_resource(res, name)
    }

    /// A failed delete precondition (row 4); upstream names the Kind here, not the resource.
    pub fn precondition_failed(res: &ResourceInfo, name: &str, detail: String) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {detail}",
                res.qualified_kind()
            ),
        )
        .for_kind(res, name)
    }

    /// 422 Invalid with one cause per field error.
    pub fn invalid(res: &ResourceInfo, name: &str, causes: Vec<Cause>) -> Self {
        Self::invalid_kind(res.kind, res.group, name, causes)
    }

    /// 422 Invalid for any group/kind, also ones that are not served resources
    /// (`DeleteOptions.meta.k8s.io`).
    pub fn invalid_kind(kind: &str, group: &str, name: &str, causes: Vec<Cause>) -> Self {
        let rendered: Vec<String> = causes
            .iter()
            .map(|c| match &c.field {
                Some(field) => format!("{field}: {}", c.message),
                None => c.message.clone(),
            })
            .collect();
        let summary = if rendered.len() == 1 {
            rendered[0].clone()
        } else {
            format!("[{}]", rendered.join(", "))
        };
        let mut err = Self::new(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {summary}", qualify(kind, group)),
        );
        err.details.name = Some(name.to_string());
        err.details.group = Some(group.to_string());
        err.details.kind = Some(kind.to_string());
        err.details.causes = causes;
        err
    }

    /// 422 for a patch that cannot be applied (a failed JSON-patch `test`, a bad path). As
    /// observed on v1.20 the Status carries a generic message and empty details; `detail` only
    /// goes to the log.
    pub fn patch_failed(detail: impl std::fmt::Display) -> Self {
        tracing::debug!(%detail, "patch cannot be applied");
        let mut err = Self::new(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
        );
        err.details.render_empty = true;
        err
    }

    /// Server-side apply conflicts: `(manager, field path)` pairs, where the manager is rendered
    /// as upstream does (`"a"`, or `"a" using v1` for an Update manager). Observed on v1.20:
    /// the details carry only the causes.
    pub fn conflict_apply(conflicts: &[(String, String)]) -> Self {
        let message = if let [(manager, path)] = conflicts {
            format!("Apply failed with 1 conflict: conflict with {manager}: {path}")
        } else {
            let mut managers: Vec<&String> = Vec::new();
            for (manager, _) in conflicts {
                if !managers.contains(&manager) {
                    managers.push(manager);
                }
            }
            let groups: Vec<String> = managers
                .iter()
                .map(|manager| {
                    let paths: Vec<String> = conflicts
                        .iter()
                        .filter(|(m, _)| m == *manager)
                        .map(|(_, p)| format!("- {p}"))
                        .collect();
                    format!("conflicts with {manager}:\n{}", paths.join("\n"))
                })
                .collect();
            format!(
                "Apply failed with {} conflicts: {}",
                conflicts.len(),
                groups.join("\n")
            )
        };
        let mut err = Self::new(409, "Conflict", message);
        err.details.causes = conflicts
            .iter()
            .map(|(manager, path)| {
                Cause::new(
                    "FieldManagerConflict",
                    format!("conflict with {manager}"),
                    Some(path),
                )
            })
            .collect();
        err
    }

    /// Server-side apply without a `fieldManager`.
    pub fn field_manager_required() -> Self {
        let mut err = Self::new(
            422,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        );
        err.details.group = Some("meta.k8s.io".into());
        err.details.kind = Some("PatchOptions".into());
        err.details.causes.push(Cause::new(
            "FieldValueRequired",
            "Required value: is required for apply patch",
            Some("fieldManager"),
        ));
        err
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// An error upstream returns without a reason (`StatusReasonUnknown`, code 500).
    pub fn internal_unknown(message: impl Into<String>) -> Self {
        Self::new(500, "", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        let message = message.into();
        let mut err = Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        );
        err.details.causes.push(Cause::new("", message, None));
        err
    }

    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        let mut err = Self::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
        );
        err.details.causes.push(Cause::new(
            "ResourceVersionTooLarge",
            "Too large resource version",
            None,
        ));
        err.details.retry_after_seconds = Some(1);
        err
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json; got {content_type:?}"
            ),
        )
    }

    /// A strategic merge patch of a custom resource (upstream offers it for built-in kinds only).
    pub fn unsupported_patch_for_custom_resources() -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        )
    }

    /// A body in a media type (or of a protobuf kind) this server does not decode.
    pub fn unsupported_body(content_type: &str, why: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf; got {content_type:?}: {why}"
            ),
        )
    }

    pub fn request_entity_too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    pub fn path_not_found(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    pub fn too_many_requests(retry_after_seconds: u64) -> Self {
        let mut err = Self::new(
            429,
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        );
        err.details.retry_after_seconds = Some(retry_after_seconds);
        err
    }

    pub fn is_not_found(&self) -> bool {
        self.code == 404
    }

    pub fn is_conflict(&self) -> bool {
        self.code == 409
    }

    /// The `metav1.Status` JSON of this error.
    pub fn to_status(&self) -> Value {
        let mut details = serde_json::Map::new();
        // `omitempty` upstream: an Invalid DeleteOptions names no object.
        if let Some(name) = self.details.name.as_deref().filter(|n| !n.is_empty()) {
            details.insert("name".into(), json!(name));
        }
        if let Some(group) = self.details.group.as_deref().filter(|g| !g.is_empty()) {
            details.insert("group".into(), json!(group));
        }
        if let Some(kind) = &self.details.kind {
            details.insert("kind".into(), json!(kind));
        }
        if !self.details.causes.is_empty() {
            let causes: Vec<Value> = self
                .details
                .causes
                .iter()
                .map(|c| {
                    let mut cause = serde_json::Map::new();
                    if !c.reason.is_empty() {
                        cause.insert("reason".into(), json!(c.reason));
                    }
                    cause.insert("message".into(), json!(c.message));
                    if let Some(field) = &c.field {
                        cause.insert("field".into(), json!(field));
                    }
                    Value::Object(cause)
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if let Some(secs) = self.details.retry_after_seconds {
            details.insert("retryAfterSeconds".into(), json!(secs));
        }
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "code": self.code,
        });
        if !self.reason.is_empty() {
            status["reason"] = json!(self.reason);
        }
        if !details.is_empty() || self.details.render_empty {
            status["details"] = Value::Object(details);
        }
        status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self.to_status()).unwrap_or_default();
        let mut response = (code, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(secs) = self.details.retry_after_seconds {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources;

    #[test]
    fn not_found_names_the_qualified_resource() {
        let lease = resources::by_plural("coordination.k8s.io", "leases").unwrap();
        let status = ApiError::not_found(lease.info(), "l1").to_status();
        assert_eq!(
            status["message"],
            "leases.coordination.k8s.io \"l1\" not found"
        );
        assert_eq!(status["details"]["kind"], "leases");
        assert_eq!(status["details"]["group"], "coordination.k8s.io");
        assert_eq!(status["reason"], "NotFound");
    }

    #[test]
    fn unknown_reason_is_omitted() {
        let status = ApiError::internal_unknown("boom").to_status();
        assert!(status.get("reason").is_none());
        assert_eq!(status["code"], 500);
    }

    #[test]
    fn invalid_lists_multiple_causes_in_brackets() {
        let cm = resources::by_plural("", "configmaps").unwrap();
        let err = ApiError::invalid(
            cm.info(),
            "x",
            vec![
                Cause::new("FieldValueRequired", "Required value", Some("a")),
                Cause::new("FieldValueRequired", "Required value", Some("b")),
            ],
        );
        assert_eq!(
            err.message,
            "ConfigMap \"x\" is invalid: [a: Required value, b: Required value]"
        );
    }
}
