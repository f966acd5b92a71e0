//! Plan, validate the whole decision, then execute.
//!
//! A guest proposes actions; the functions here turn a whole decision into a
//! plan of concrete writes, or refuse it. They are pure (the key, the input the
//! guest saw, host-known facts, the decision), so a decision is refused before
//! its first write: a decision with any invalid action writes nothing. The rule
//! is the upstream controller's behaviour (upstream-behaviour §1, §3): a guest
//! may choose among the writes the upstream controller could make for this key,
//! never anything else. A refusal stays typed up to the reconcile error
//! (`ReconcileError::Rejected`).

/// Longest name, uid, resourceVersion, finalizer or consumer field accepted
/// from a guest (a DNS subdomain).
pub const MAX_NAME: usize = 253;
/// Longest label or annotation key (`<prefix>/<name>`: 253 + 1 + 63).
pub const MAX_KEY: usize = 317;
/// Longest claim spec JSON or annotation value.
pub const MAX_VALUE: usize = 64 * 1024;

/// A refused decision: nothing of it was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("decision for {key} rejected{}: {reason}", .action.as_ref().map(|a| format!(" at {a}")).unwrap_or_default())]
pub struct Rejected {
    /// The work-queue key the decision was made for.
    pub key: String,
    /// The offending action, when one action is to blame.
    pub action: Option<ActionRef>,
    pub reason: String,
}

/// One action of a decision: its position (from 1) and what it asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("action {index} ({description})")]
pub struct ActionRef {
    pub index: usize,
    pub description: String,
}

impl Rejected {
    /// The decision as a whole is refused (e.g. too many actions).
    pub fn decision(key: &str, reason: impl Into<String>) -> Self {
        Self {
            key: key.to_string(),
            action: None,
            reason: reason.into(),
        }
    }

    /// Action `index` (0-based) is refused.
    pub fn action(key: &str, index: usize, description: String, reason: impl Into<String>) -> Self {
        Self {
            key: key.to_string(),
            action: Some(ActionRef {
                index: index + 1,
                description,
            }),
            reason: reason.into(),
        }
    }
}

/// Refuses a decision with more than `max` actions before looking at any.
pub(crate) fn check_count(key: &str, count: usize, max: usize) -> Result<(), Rejected> {
    if count > max {
        return Err(Rejected::decision(
            key,
            format!("{count} actions, at most {max} allowed for this key"),
        ));
    }
    Ok(())
}

/// Refuses a guest string longer than `max` bytes.
pub(crate) fn bounded(field: &str, value: &str, max: usize) -> Result<(), String> {
    if value.len() > max {
        return Err(format!(
            "{field} is {} bytes, at most {max} allowed",
            value.len()
        ));
    }
    Ok(())
}

/// Refuses to write against an empty resourceVersion: it would make a patch
/// unconditional (the API server treats a missing version as "any").
pub(crate) fn versioned(what: &str, resource_version: &str) -> Result<(), String> {
    if resource_version.is_empty() {
        return Err(format!(
            "{what} was seen with an empty resourceVersion: a write would be unconditional"
        ));
    }
    Ok(())
}

/// A guest string for a message: quoted, cut to a readable length.
pub(crate) fn shown(value: &str) -> String {
    const SHOWN: usize = 64;
    if value.len() <= SHOWN {
        return format!("{value:?}");
    }
    let cut = value.floor_char_boundary(SHOWN);
    format!("{:?}…", &value[..cut])
}

/// The reason a refused plan gives, after checking that it names `key` and
/// blames the action at `index` (counted from 0).
#[cfg(test)]
#[track_caller]
pub(crate) fn rejected_at<T: std::fmt::Debug>(
    result: Result<T, Rejected>,
    key: &str,
    index: usize,
) -> String {
    let err = result.expect_err("rejected");
    assert_eq!(err.key, key);
    assert_eq!(
        err.action.as_ref().map(|a| a.index),
        Some(index + 1),
        "{err}"
    );
    err.reason
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_key_and_action() {
        let r = Rejected::action(
            "pod:ns/web",
            1,
            "reserve claim \"c\"".into(),
            "not allocated",
        );
        assert_eq!(
            r.to_string(),
            "decision for pod:ns/web rejected at action 2 (reserve claim \"c\"): not allocated"
        );
        let whole = Rejected::decision("ns/data", "3 actions");
        assert_eq!(
            whole.to_string(),
            "decision for ns/data rejected: 3 actions"
        );
    }

    #[test]
    fn long_guest_strings_are_cut_in_messages() {
        let long = "x".repeat(10_000);
        assert!(shown(&long).len() < 80);
        assert_eq!(shown("web"), "\"web\"");
        assert!(bounded("name", &long, MAX_NAME).is_err());
        assert!(bounded("name", "web", MAX_NAME).is_ok());
    }
}
