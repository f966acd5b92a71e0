//! RFC 7386 JSON merge patch: maps merge, `null` deletes, lists are replaced.

use serde_json::Value;

pub fn apply(current: &Value, patch: &Value) -> Value {
    let mut doc = current.clone();
    json_patch::merge(&mut doc, patch);
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_deletes_and_lists_replace() {
        let doc = json!({"metadata": {"finalizers": ["a", "b"], "labels": {"x": "1", "y": "2"}}});
        let out = apply(
            &doc,
            &json!({"metadata": {"finalizers": ["c"], "labels": {"x": null}}}),
        );
        assert_eq!(
            out,
            json!({"metadata": {"finalizers": ["c"], "labels": {"y": "2"}}})
        );
    }
}
