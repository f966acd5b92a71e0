//! Variables of one scenario run: `${name}` references in strings.

use std::collections::BTreeMap;

use serde_json::Value;

/// Errors while substituting variables.
#[derive(Debug, thiserror::Error)]
pub enum VarsError {
    #[error("unknown variable ${{{0}}} (not captured by an earlier step)")]
    Unknown(String),
    #[error("unterminated variable reference in {0:?}")]
    Unterminated(String),
    #[error("variable ${{{0}}} holds a non-scalar value and is used inside a string")]
    NotScalar(String),
}

/// Captured values, by name.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    values: BTreeMap<String, Value>,
}

impl Vars {
    pub fn set(&mut self, name: &str, value: Value) {
        self.values.insert(name.to_owned(), value);
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values.get(name)
    }

    /// Every string value (for message normalisation), as (name, value).
    pub fn string_values(&self) -> impl Iterator<Item = (&str, String)> {
        self.values.iter().filter_map(|(k, v)| match v {
            Value::String(s) => Some((k.as_str(), s.clone())),
            Value::Number(n) => Some((k.as_str(), n.to_string())),
            _ => None,
        })
    }

    /// Substitutes every `${var}` in a JSON value. A string that is exactly one
    /// reference becomes the variable's value (keeping its JSON type).
    pub fn substitute(&self, value: &Value) -> Result<Value, VarsError> {
        Ok(match value {
            Value::String(s) => self.substitute_str_value(s)?,
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.substitute(v))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| Ok((self.substitute_str(k)?, self.substitute(v)?)))
                    .collect::<Result<_, VarsError>>()?,
            ),
            other => other.clone(),
        })
    }

    fn substitute_str_value(&self, s: &str) -> Result<Value, VarsError> {
        if let Some(name) = s.strip_prefix("${").and_then(|r| r.strip_suffix('}'))
            && !name.contains(['$', '{', '}'])
        {
            return self
                .values
                .get(name)
                .cloned()
                .ok_or_else(|| VarsError::Unknown(name.to_owned()));
        }
        Ok(Value::String(self.substitute_str(s)?))
    }

    /// Substitutes every `${var}` inside a string by the variable's text.
    pub fn substitute_str(&self, s: &str) -> Result<String, VarsError> {
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| VarsError::Unterminated(s.to_owned()))?;
            let name = &after[..end];
            match self.values.get(name) {
                Some(Value::String(v)) => out.push_str(v),
                Some(Value::Number(n)) => out.push_str(&n.to_string()),
                Some(Value::Bool(b)) => out.push_str(&b.to_string()),
                Some(_) => return Err(VarsError::NotScalar(name.to_owned())),
                None => return Err(VarsError::Unknown(name.to_owned())),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars() -> Vars {
        let mut v = Vars::default();
        v.set("ns", json!("diff-abc"));
        v.set("grace", json!(30));
        v.set("list", json!(["a"]));
        v
    }

    #[test]
    fn whole_string_reference_keeps_the_json_type() {
        let v = vars();
        assert_eq!(v.substitute(&json!("${grace}")).unwrap(), json!(30));
        assert_eq!(v.substitute(&json!("${list}")).unwrap(), json!(["a"]));
    }

    #[test]
    fn references_inside_strings_and_keys_are_replaced() {
        let v = vars();
        let got = v
            .substitute(&json!({"/api/v1/namespaces/${ns}": "g=${grace}s"}))
            .unwrap();
        assert_eq!(got, json!({"/api/v1/namespaces/diff-abc": "g=30s"}));
    }

    #[test]
    fn unknown_and_unterminated_references_are_errors() {
        let v = vars();
        assert!(matches!(
            v.substitute_str("x${nope}"),
            Err(VarsError::Unknown(n)) if n == "nope"
        ));
        assert!(matches!(
            v.substitute_str("x${ns"),
            Err(VarsError::Unterminated(_))
        ));
        assert!(matches!(
            v.substitute_str("x${list}"),
            Err(VarsError::NotScalar(_))
        ));
    }
}
