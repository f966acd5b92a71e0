//! RFC 6902 JSON patch with the apiserver's (evanphx/json-patch) `test` semantics.

use json_patch::PatchOperation;
use serde_json::Value;

use crate::errors::ApiError;

/// Applies the operations in order. Any failure, including a failed `test`, is a 422 (upstream
/// `applyJSPatch`). Unlike the `json-patch` crate, a `test` of a missing member of an existing
/// object against `null` succeeds, as in evanphx/json-patch: kube-runtime's finalizer helper
/// sends `test /metadata/finalizers == null` when the list is absent.
pub fn apply(current: &Value, patch: &Value) -> Result<Value, ApiError> {
    let ops: Vec<PatchOperation> = serde_json::from_value(patch.clone())
        .map_err(|err| ApiError::bad_request(format!("error decoding JSON patch: {err}")))?;
    let mut doc = current.clone();
    for (index, op) in ops.iter().enumerate() {
        if let PatchOperation::Test(test) = op
            && test.value.is_null()
        {
            let path = test.path.as_str();
            if doc.pointer(path).is_none() {
                let parent = &path[..path.rfind('/').unwrap_or(0)];
                if doc.pointer(parent).is_some_and(Value::is_object) {
                    continue;
                }
                return Err(ApiError::patch_failed(format!(
                    "operation {index}: testing value {path} failed: its parent does not exist"
                )));
            }
        }
        json_patch::patch(&mut doc, std::slice::from_ref(op)).map_err(ApiError::patch_failed)?;
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn test_against_null_of_a_missing_member_succeeds() {
        let doc = json!({"metadata": {"name": "a"}});
        let patch = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}
        ]);
        let out = apply(&doc, &patch).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["f"]));
    }

    #[test]
    fn failed_test_is_422() {
        let doc = json!({"metadata": {"finalizers": ["x"]}});
        let err = apply(
            &doc,
            &json!([{"op": "test", "path": "/metadata/finalizers", "value": null}]),
        )
        .unwrap_err();
        assert_eq!(err.code, 422);
        let err = apply(
            &doc,
            &json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "y"}]),
        )
        .unwrap_err();
        assert_eq!((err.code, err.reason), (422, "Invalid"));
        let err = apply(
            &doc,
            &json!([{"op": "test", "path": "/nope/deeper", "value": null}]),
        )
        .unwrap_err();
        assert_eq!(err.code, 422);
    }
}
