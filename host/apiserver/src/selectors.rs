//! Label selectors and field selectors (rows 16 and 21).

use serde_json::Value;

use crate::errors::ApiError;
use crate::meta;
use crate::resources::ResourceInfo;

#[derive(Debug, Clone, PartialEq)]
enum LabelRequirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed `labelSelector`; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<LabelRequirement>);

/// Splits on commas outside parentheses.
fn split_terms(text: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&text[start..]);
    terms
        .into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

fn parse_set(term: &str, rest: &str) -> Result<Vec<String>, ApiError> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "unable to parse requirement: found '{term}', expected: '(' ... ')'"
            ))
        })?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect())
}

fn check_key(key: &str, term: &str) -> Result<String, ApiError> {
    let valid = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if valid {
        Ok(key.to_string())
    } else {
        Err(ApiError::bad_request(format!(
            "unable to parse requirement: invalid label key \"{key}\" in \"{term}\""
        )))
    }
}

impl LabelSelector {
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for term in split_terms(text) {
            let req = if let Some(key) = term.strip_prefix('!') {
                LabelRequirement::DoesNotExist(check_key(key.trim(), term)?)
            } else if let Some((key, value)) = term.split_once("!=") {
                LabelRequirement::NotEquals(check_key(key.trim(), term)?, value.trim().to_string())
            } else if let Some((key, value)) =
                term.split_once("==").or_else(|| term.split_once('='))
            {
                LabelRequirement::Equals(check_key(key.trim(), term)?, value.trim().to_string())
            } else if let Some((key, rest)) = term.split_once(" notin ") {
                LabelRequirement::NotIn(check_key(key.trim(), term)?, parse_set(term, rest)?)
            } else if let Some((key, rest)) = term.split_once(" in ") {
                LabelRequirement::In(check_key(key.trim(), term)?, parse_set(term, rest)?)
            } else {
                LabelRequirement::Exists(check_key(term, term)?)
            };
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        let labels = meta::labels(obj);
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|req| match req {
            LabelRequirement::Equals(k, v) => get(k) == Some(v.as_str()),
            LabelRequirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            LabelRequirement::In(k, vs) => get(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            LabelRequirement::NotIn(k, vs) => get(k).is_none_or(|l| !vs.iter().any(|v| v == l)),
            LabelRequirement::Exists(k) => get(k).is_some(),
            LabelRequirement::DoesNotExist(k) => get(k).is_none(),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
struct FieldRequirement {
    pointer: String,
    value: String,
    negated: bool,
}

/// A parsed `fieldSelector` for one resource.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<FieldRequirement>);

impl FieldSelector {
    pub fn parse(text: &str, info: &ResourceInfo) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, value, negated) = if let Some((f, v)) = term.split_once("!=") {
                (f, v, true)
            } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (f, v, false)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{text}'; can't understand '{term}'"
                )));
            };
            let field = field.trim();
            let pointer = match field {
                "metadata.name" => "/metadata/name",
                "metadata.namespace" => "/metadata/namespace",
                other => info
                    .selectable_fields
                    .iter()
                    .find(|(label, _)| *label == other)
                    .map(|(_, pointer)| *pointer)
                    .ok_or_else(|| {
                        ApiError::bad_request(format!("field label not supported: {other}"))
                    })?,
            };
            reqs.push(FieldRequirement {
                pointer: pointer.to_string(),
                value: value.trim().to_string(),
                negated,
            });
        }
        Ok(FieldSelector(reqs))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|req| {
            let actual = match obj.pointer(&req.pointer) {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            (actual == req.value) != req.negated
        })
    }
}

/// Label and field selector of one request.
#[derive(Debug, Clone, Default)]
pub struct Selectors {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Selectors {
    pub fn parse(
        label: Option<&str>,
        field: Option<&str>,
        info: &ResourceInfo,
    ) -> Result<Self, ApiError> {
        Ok(Selectors {
            labels: label
                .map(LabelSelector::parse)
                .transpose()?
                .unwrap_or_default(),
            fields: field
                .map(|f| FieldSelector::parse(f, info))
                .transpose()?
                .unwrap_or_default(),
        })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(obj) && self.fields.matches(obj)
    }

    /// Selects every object.
    pub fn is_empty(&self) -> bool {
        self.labels.0.is_empty() && self.fields.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "d", "labels": labels}, "spec": {"nodeName": "n1"}})
    }

    #[test]
    fn label_operators() {
        let o = obj(json!({"app": "web", "tier": "front"}));
        let cases = [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (web, db)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("!missing,app=web", true),
            ("missing notin (x)", true),
        ];
        for (text, want) in cases {
            assert_eq!(
                LabelSelector::parse(text).unwrap().matches(&o),
                want,
                "{text}"
            );
        }
    }

    #[test]
    fn pod_field_selectors() {
        let pods = resources::pods().info();
        let o = obj(json!({}));
        assert!(
            FieldSelector::parse("spec.nodeName=n1", pods)
                .unwrap()
                .matches(&o)
        );
        assert!(
            FieldSelector::parse("spec.nodeName==n1,metadata.name=p", pods)
                .unwrap()
                .matches(&o)
        );
        assert!(
            !FieldSelector::parse("spec.nodeName!=n1", pods)
                .unwrap()
                .matches(&o)
        );
        assert!(
            FieldSelector::parse("status.phase=", pods)
                .unwrap()
                .matches(&o)
        );
        let err = FieldSelector::parse("spec.foo=x", pods).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (400, "field label not supported: spec.foo")
        );
        let cms = resources::by_plural("", "configmaps").unwrap().info();
        assert!(FieldSelector::parse("spec.nodeName=n1", cms).is_err());
    }
}
