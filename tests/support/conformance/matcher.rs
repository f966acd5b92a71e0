//! Field matchers: what a JSON pointer of a response must hold.
//!
//! A matcher is either a literal (deep equality) or a one-key map naming a
//! check: `absent`, `present`, `eq`, `ne`, `gt`, `ge`, `lt`, `le` (integers, also
//! as strings such as resourceVersions), `contains`, `len`, `generated-from`
//! (prefix + 5 chars of the name-generator alphabet), `seconds-from-now`
//! (`[min, max]`, an RFC 3339 time relative to when the response arrived),
//! `before` / `after` / `not-after` (RFC 3339 times).

use chrono::{DateTime, Utc};
use serde_json::Value;

/// The alphabet of `k8s.io/apimachinery/pkg/util/rand` used by generateName.
pub const NAME_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

/// Length of the random suffix generateName appends.
pub const NAME_SUFFIX_LEN: usize = 5;

const KEYWORDS: &[&str] = &[
    "absent",
    "present",
    "eq",
    "ne",
    "gt",
    "ge",
    "lt",
    "le",
    "contains",
    "len",
    "generated-from",
    "seconds-from-now",
    "before",
    "after",
    "not-after",
];

/// A failed or malformed check, as a sentence for the report.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Mismatch(pub String);

fn mismatch(msg: impl Into<String>) -> Mismatch {
    Mismatch(msg.into())
}

/// Checks the value found at a pointer (`None` when missing) against a matcher.
pub fn check(actual: Option<&Value>, matcher: &Value, now: DateTime<Utc>) -> Result<(), Mismatch> {
    let Some((keyword, arg)) = keyword_of(matcher) else {
        return equal(actual, matcher);
    };
    match keyword {
        "absent" => match actual {
            None | Some(Value::Null) => Ok(()),
            Some(v) => Err(mismatch(format!("expected absent, found {v}"))),
        },
        "present" => match actual {
            None | Some(Value::Null) => Err(mismatch("expected present, found nothing")),
            Some(_) => Ok(()),
        },
        "eq" => equal(actual, arg),
        "ne" => match actual {
            Some(v) if v == arg => Err(mismatch(format!("expected anything but {arg}"))),
            _ => Ok(()),
        },
        "gt" | "ge" | "lt" | "le" => compare_ints(keyword, actual, arg),
        "contains" => contains(actual, arg),
        "len" => length(actual, arg),
        "generated-from" => generated_from(actual, arg),
        "seconds-from-now" => seconds_from_now(actual, arg, now),
        "before" | "after" | "not-after" => compare_times(keyword, actual, arg),
        _ => unreachable!("KEYWORDS lists every arm"),
    }
}

fn keyword_of(matcher: &Value) -> Option<(&str, &Value)> {
    let map = matcher.as_object()?;
    if map.len() != 1 {
        return None;
    }
    let (k, v) = map.iter().next()?;
    KEYWORDS.contains(&k.as_str()).then_some((k.as_str(), v))
}

fn found(actual: Option<&Value>) -> String {
    actual.map_or_else(|| "nothing".to_owned(), Value::to_string)
}

fn equal(actual: Option<&Value>, expected: &Value) -> Result<(), Mismatch> {
    if actual == Some(expected) {
        Ok(())
    } else {
        Err(mismatch(format!(
            "expected {expected}, found {}",
            found(actual)
        )))
    }
}

/// An integer, also written as a string (resourceVersions are strings).
pub fn as_int(v: &Value) -> Option<i128> {
    match v {
        Value::Number(n) => n.as_i64().map(i128::from),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn compare_ints(op: &str, actual: Option<&Value>, arg: &Value) -> Result<(), Mismatch> {
    let bound = as_int(arg).ok_or_else(|| mismatch(format!("{op}: bound {arg} is no integer")))?;
    let value = actual.and_then(as_int).ok_or_else(|| {
        mismatch(format!(
            "{op} {bound}: found {} (no integer)",
            found(actual)
        ))
    })?;
    let ok = match op {
        "gt" => value > bound,
        "ge" => value >= bound,
        "lt" => value < bound,
        _ => value <= bound,
    };
    if ok {
        Ok(())
    } else {
        Err(mismatch(format!("expected {op} {bound}, found {value}")))
    }
}

fn contains(actual: Option<&Value>, arg: &Value) -> Result<(), Mismatch> {
    let ok = match (actual, arg) {
        (Some(Value::String(s)), Value::String(part)) => s.contains(part.as_str()),
        (Some(Value::Array(items)), item) => items.contains(item),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(mismatch(format!(
            "expected something containing {arg}, found {}",
            found(actual)
        )))
    }
}

fn length(actual: Option<&Value>, arg: &Value) -> Result<(), Mismatch> {
    let len = match actual {
        Some(Value::Array(a)) => a.len(),
        Some(Value::Object(o)) => o.len(),
        Some(Value::String(s)) => s.chars().count(),
        None | Some(Value::Null) => 0,
        Some(other) => return Err(mismatch(format!("len: {other} has no length"))),
    };
    if arg.as_u64() == Some(len as u64) {
        Ok(())
    } else {
        Err(mismatch(format!(
            "expected length {arg}, found {len} in {}",
            found(actual)
        )))
    }
}

fn generated_from(actual: Option<&Value>, arg: &Value) -> Result<(), Mismatch> {
    let prefix = arg
        .as_str()
        .ok_or_else(|| mismatch("generated-from needs a prefix string"))?;
    let name = actual.and_then(Value::as_str).ok_or_else(|| {
        mismatch(format!(
            "expected a generated name, found {}",
            found(actual)
        ))
    })?;
    let suffix = name
        .strip_prefix(prefix)
        .ok_or_else(|| mismatch(format!("{name:?} does not start with {prefix:?}")))?;
    if suffix.chars().count() == NAME_SUFFIX_LEN
        && suffix.chars().all(|c| NAME_ALPHABET.contains(c))
    {
        Ok(())
    } else {
        Err(mismatch(format!(
            "{name:?}: suffix {suffix:?} is not {NAME_SUFFIX_LEN} chars of {NAME_ALPHABET:?}"
        )))
    }
}

fn parse_time(v: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(v.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn seconds_from_now(
    actual: Option<&Value>,
    arg: &Value,
    now: DateTime<Utc>,
) -> Result<(), Mismatch> {
    let bounds = arg
        .as_array()
        .and_then(|b| Some((b.first()?.as_f64()?, b.get(1)?.as_f64()?)))
        .ok_or_else(|| mismatch("seconds-from-now needs [min, max]"))?;
    let at = actual
        .and_then(parse_time)
        .ok_or_else(|| mismatch(format!("expected a timestamp, found {}", found(actual))))?;
    let delta = (at - now).num_milliseconds() as f64 / 1000.0;
    if delta >= bounds.0 && delta <= bounds.1 {
        Ok(())
    } else {
        Err(mismatch(format!(
            "expected {}..{} s from now, found {delta:.1} s ({at})",
            bounds.0, bounds.1
        )))
    }
}

fn compare_times(op: &str, actual: Option<&Value>, arg: &Value) -> Result<(), Mismatch> {
    let bound = parse_time(arg).ok_or_else(|| mismatch(format!("{op}: {arg} is no timestamp")))?;
    let at = actual
        .and_then(parse_time)
        .ok_or_else(|| mismatch(format!("expected a timestamp, found {}", found(actual))))?;
    let ok = match op {
        "before" => at < bound,
        "after" => at > bound,
        _ => at <= bound,
    };
    if ok {
        Ok(())
    } else {
        Err(mismatch(format!("expected {op} {bound}, found {at}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(actual: Option<Value>, matcher: Value) -> bool {
        check(actual.as_ref(), &matcher, Utc::now()).is_ok()
    }

    #[test]
    fn literals_compare_deeply() {
        assert!(ok(Some(json!({"a": [1]})), json!({"a": [1]})));
        assert!(!ok(Some(json!({"a": [1]})), json!({"a": [2]})));
        assert!(!ok(None, json!("x")));
        assert!(ok(Some(json!({"absent": 1})), json!({"eq": {"absent": 1}})));
    }

    #[test]
    fn presence() {
        assert!(ok(None, json!({"absent": true})));
        assert!(!ok(Some(json!("x")), json!({"absent": true})));
        assert!(ok(Some(json!("x")), json!({"present": true})));
        assert!(!ok(Some(Value::Null), json!({"present": true})));
    }

    #[test]
    fn integers_compare_also_as_strings() {
        assert!(ok(Some(json!("120")), json!({"gt": "99"})));
        assert!(!ok(Some(json!("99")), json!({"gt": "120"})));
        assert!(ok(Some(json!(30)), json!({"le": 30})));
        assert!(!ok(Some(json!("abc")), json!({"ge": 1})));
    }

    #[test]
    fn generated_names_use_the_upstream_alphabet() {
        assert!(ok(
            Some(json!("cm-b2x9z")),
            json!({"generated-from": "cm-"})
        ));
        assert!(!ok(
            Some(json!("cm-abcde")),
            json!({"generated-from": "cm-"})
        ));
        assert!(!ok(
            Some(json!("cm-b2x9")),
            json!({"generated-from": "cm-"})
        ));
        assert!(!ok(
            Some(json!("x-b2x9z")),
            json!({"generated-from": "cm-"})
        ));
    }

    #[test]
    fn times_relative_to_now_and_to_each_other() {
        let now = Utc::now();
        let in_30 = (now + chrono::Duration::seconds(30)).to_rfc3339();
        assert!(
            check(
                Some(&json!(in_30)),
                &json!({"seconds-from-now": [25, 31]}),
                now
            )
            .is_ok()
        );
        assert!(
            check(
                Some(&json!(in_30)),
                &json!({"seconds-from-now": [-2, 2]}),
                now
            )
            .is_err()
        );
        let earlier = "2024-01-01T00:00:00Z";
        assert!(ok(Some(json!(earlier)), json!({"before": in_30})));
        assert!(!ok(Some(json!(earlier)), json!({"after": in_30})));
        assert!(ok(Some(json!(earlier)), json!({"not-after": earlier})));
    }

    #[test]
    fn contains_and_len() {
        assert!(ok(
            Some(json!("too old resource version")),
            json!({"contains": "too old"})
        ));
        assert!(ok(Some(json!(["a", "b"])), json!({"contains": "b"})));
        assert!(!ok(Some(json!(["a"])), json!({"contains": "b"})));
        assert!(ok(Some(json!(["a", "b"])), json!({"len": 2})));
        assert!(ok(None, json!({"len": 0})));
    }
}
