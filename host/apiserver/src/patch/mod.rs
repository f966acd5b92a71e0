//! PATCH bodies: JSON merge patch (row 11), JSON patch (row 12), strategic merge patch (row 13)
//! and server-side apply with managed fields (row 10).

pub mod apply;
pub mod fieldset;
mod json;
mod merge;
mod strategic;

use serde_json::Value;

use crate::errors::ApiError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchType {
    /// The patch type named by a request's Content-Type (parameters ignored).
    pub fn from_content_type(content_type: &str) -> Result<Self, ApiError> {
        let media = content_type.split(';').next().unwrap_or("").trim();
        match media {
            "application/json-patch+json" => Ok(PatchType::Json),
            "application/merge-patch+json" => Ok(PatchType::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchType::Strategic),
            "application/apply-patch+yaml" => Ok(PatchType::Apply),
            other => Err(ApiError::unsupported_media_type(other)),
        }
    }
}

/// Parses a patch body (JSON, or YAML for apply).
pub fn parse_body(patch_type: PatchType, body: &[u8]) -> Result<Value, ApiError> {
    if patch_type == PatchType::Apply {
        let config = crate::yaml::from_slice(body)
            .map_err(|err| ApiError::bad_request(format!("error decoding YAML: {err}")))?;
        // Upstream unmarshals the configuration into a map: anything else is a bad request.
        if !config.is_object() {
            return Err(ApiError::bad_request(format!(
                "error decoding YAML: an apply configuration must be an object, found {}",
                crate::yaml::type_name(&config)
            )));
        }
        return Ok(config);
    }
    serde_json::from_slice(body)
        .map_err(|err| ApiError::bad_request(format!("error decoding patch: {err}")))
}

/// Applies a JSON, merge or strategic patch to `current` (`kind` picks strategic merge keys).
pub fn apply_patch(
    patch_type: PatchType,
    kind: &str,
    current: &Value,
    patch: &Value,
) -> Result<Value, ApiError> {
    let patched = match patch_type {
        PatchType::Json => json::apply(current, patch)?,
        // evanphx/json-patch refuses a merge patch that is not an object (ErrBadJSONPatch, 400).
        PatchType::Merge if !patch.is_object() => {
            return Err(ApiError::bad_request("Invalid JSON Patch"));
        }
        PatchType::Merge => merge::apply(current, patch),
        PatchType::Strategic => strategic::apply(kind, current, patch)?,
        PatchType::Apply => {
            return Err(ApiError::internal(
                "server-side apply goes through patch::apply",
            ));
        }
    };
    // A JSON patch may replace the whole document (`"path": ""`) with a non-object.
    if !patched.is_object() {
        return Err(ApiError::patch_failed(format!(
            "the patched object is {}",
            crate::yaml::type_name(&patched)
        )));
    }
    Ok(patched)
}
