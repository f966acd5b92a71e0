//! Query parameters and request bodies.

use std::collections::HashMap;
use std::time::Duration;

use http::HeaderMap;
use serde_json::Value;

use super::protobuf::{self, ProtobufError};
use crate::errors::{ApiError, Cause};
use crate::verbs::{DeleteOptions, PropagationPolicy};

/// The longest watch a client can ask for: a year.
pub const MAX_WATCH_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

#[derive(Debug, Default)]
pub struct Params(pub HashMap<String, String>);

impl Params {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Present and not empty.
    pub fn non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1" | "True"))
    }

    pub fn number(&self, key: &str) -> Result<Option<i64>, ApiError> {
        self.non_empty(key)
            .map(|v| {
                v.parse::<i64>()
                    .map_err(|_| ApiError::bad_request(format!("invalid value for {key}: {v:?}")))
            })
            .transpose()
    }

    /// `timeoutSeconds`, at most [`MAX_WATCH_TIMEOUT`] (deadlines past it would overflow).
    pub fn timeout(&self) -> Result<Option<Duration>, ApiError> {
        Ok(self
            .number("timeoutSeconds")?
            .map(|s| Duration::from_secs(s.max(0) as u64).min(MAX_WATCH_TIMEOUT)))
    }
}

/// A create/update body: JSON, YAML or Kubernetes protobuf, as the Content-Type says.
pub fn parse_object_body(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let content_type = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let media = content_type.split(';').next().unwrap_or("").trim();
    // Shapes other than objects are refused by `prepare::decode` with upstream's message.
    Ok(match media {
        "application/vnd.kubernetes.protobuf" => {
            protobuf::decode(body).map_err(|err| match err {
                ProtobufError::UnsupportedKind { .. } | ProtobufError::Encoding(_) => {
                    ApiError::unsupported_body(content_type, &err.to_string())
                }
                _ => ApiError::bad_request(format!("couldn't decode protobuf body: {err}")),
            })?
        }
        _ if media.contains("protobuf") || media.contains("cbor") => {
            return Err(ApiError::unsupported_body(
                content_type,
                "the rekon embedded API server decodes only application/json, application/yaml and application/vnd.kubernetes.protobuf",
            ));
        }
        _ if media.contains("yaml") => crate::yaml::from_slice(body)
            .map_err(|err| ApiError::bad_request(format!("couldn't decode YAML body: {err}")))?,
        _ => serde_json::from_slice(body).map_err(|err| {
            ApiError::bad_request(format!(
                "couldn't get version/kind; json parse error: {err}"
            ))
        })?,
    })
}

/// DeleteOptions from the body, with query parameters filling what the body leaves out.
pub fn delete_options(params: &Params, body: &[u8]) -> Result<DeleteOptions, ApiError> {
    let mut body: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Default::default())
    } else {
        serde_json::from_slice(body)
            .map_err(|err| ApiError::bad_request(format!("invalid DeleteOptions: {err}")))?
    };
    // Upstream decodes the policy as a free string and validates it afterwards (422), so it is
    // taken out before the typed decode would refuse an unknown value (400).
    let body_policy = match body
        .as_object_mut()
        .and_then(|b| b.remove("propagationPolicy"))
    {
        None | Some(Value::Null) => None,
        Some(Value::String(policy)) => Some(policy),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "invalid DeleteOptions: propagationPolicy must be a string, found {other}"
            )));
        }
    };
    let mut opts: DeleteOptions = serde_json::from_value(body)
        .map_err(|err| ApiError::bad_request(format!("invalid DeleteOptions: {err}")))?;
    if opts.dry_run.as_ref().is_some_and(|d| !d.is_empty()) {
        return Err(ApiError::bad_request(
            "dryRun is not supported by the rekon embedded API server",
        ));
    }
    if opts.grace_period_seconds.is_none() {
        opts.grace_period_seconds = params.number("gracePeriodSeconds")?;
    }
    let policy = body_policy.or_else(|| params.non_empty("propagationPolicy").map(str::to_string));
    opts.propagation_policy = policy.as_deref().map(propagation_policy).transpose()?;
    if opts.orphan_dependents.is_none() && params.non_empty("orphanDependents").is_some() {
        opts.orphan_dependents = Some(params.flag("orphanDependents"));
    }
    Ok(opts)
}

/// Upstream `ValidateDeleteOptions`: an unknown policy is an Invalid DeleteOptions.
fn propagation_policy(policy: &str) -> Result<PropagationPolicy, ApiError> {
    match policy {
        "Orphan" => Ok(PropagationPolicy::Orphan),
        "Background" => Ok(PropagationPolicy::Background),
        "Foreground" => Ok(PropagationPolicy::Foreground),
        other => Err(ApiError::invalid_kind(
            "DeleteOptions",
            "meta.k8s.io",
            "",
            vec![Cause::new(
                "FieldValueNotSupported",
                format!(
                    "Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                ),
                Some("propagationPolicy"),
            )],
        )),
    }
}

/// The field manager upstream assumes when a request names none: the User-Agent's program
/// name (`kubectl/v1.32.4 ...` → `kubectl`); "unknown" without a User-Agent.
pub fn default_manager(headers: &HeaderMap) -> String {
    headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .and_then(|agent| agent.split('/').next())
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_options_merge_body_and_query() {
        let params = Params(
            [("gracePeriodSeconds".to_string(), "5".to_string())]
                .into_iter()
                .collect(),
        );
        let opts = delete_options(
            &params,
            br#"{"preconditions": {"uid": "u"}, "propagationPolicy": "Foreground"}"#,
        )
        .unwrap();
        assert_eq!(opts.grace_period_seconds, Some(5));
        assert_eq!(opts.preconditions.unwrap().uid.as_deref(), Some("u"));
        assert_eq!(opts.propagation_policy, Some(PropagationPolicy::Foreground));
        assert!(delete_options(&Params::default(), b"{nope").is_err());
    }

    #[test]
    fn unknown_propagation_policy_is_an_invalid_delete_options() {
        let err = delete_options(
            &Params::default(),
            br#"{"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Sideways"}"#,
        )
        .unwrap_err();
        assert_eq!((err.code, err.reason), (422, "Invalid"));
        assert_eq!(
            err.message,
            r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil""#
        );
        let status = err.to_status();
        assert_eq!(status["details"]["kind"], "DeleteOptions");
        assert_eq!(status["details"]["group"], "meta.k8s.io");
        assert!(status["details"].get("name").is_none());
        assert_eq!(status["details"]["causes"][0]["field"], "propagationPolicy");

        let query = Params(
            [("propagationPolicy".to_string(), "Sideways".to_string())]
                .into_iter()
                .collect(),
        );
        assert_eq!(delete_options(&query, b"").unwrap_err().code, 422);
    }
}
