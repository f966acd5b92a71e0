//! The data format of a conformance scenario (`tests/conformance/*.yaml`).
//!
//! A scenario is an ordered list of steps sent to one API server. Every step is
//! either a plain request or a watch; both carry the expectations the response
//! must meet and may capture values for later steps. Strings may reference
//! captured values as `${var}`; `${ns}` is the scenario's own namespace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// Errors while loading scenario files.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read scenario directory {dir}: {source}")]
    ReadDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read scenario file {file}: {source}")]
    ReadFile {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid scenario file {file}: {source}")]
    Parse {
        file: PathBuf,
        source: serde_yaml::Error,
    },
    #[error("scenario file {file}, step {step:?}: {problem}")]
    Invalid {
        file: PathBuf,
        step: String,
        problem: String,
    },
}

/// Which servers a scenario (or step) applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Since {
    /// Present in Kubernetes v1.20: runs against both servers and is compared.
    #[default]
    Core,
    /// Newer than v1.20 (resource.k8s.io, pod resourceClaims): embedded server only.
    EmbeddedOnly,
}

/// One scenario file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub since: Since,
    /// Why a scenario is `embedded-only`.
    #[serde(default)]
    pub why: Option<String>,
    pub steps: Vec<Step>,
    /// The file the scenario came from (for messages).
    #[serde(skip)]
    pub file: PathBuf,
}

/// One step: a request or a watch, with its expectations.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Step {
    pub name: String,
    #[serde(default)]
    pub request: Option<Request>,
    #[serde(default)]
    pub watch: Option<Watch>,
    #[serde(default)]
    pub collect: Option<Collect>,
    #[serde(default)]
    pub expect: Expect,
    /// Variables to capture from the response body: var name -> JSON pointer.
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
    /// The embedded server deliberately differs from v1.20 here: `expect` holds
    /// the newer behaviour (checked on the embedded server only) and `v1_20`
    /// holds what the real server does (if absent the step is not sent to it).
    #[serde(default)]
    pub differs: Option<String>,
    #[serde(default, rename = "v1.20")]
    pub v1_20: Option<Expect>,
    /// Compare the normalised `message` of both servers.
    #[serde(default)]
    pub same_message: bool,
    /// Resend the request until the expectations hold or this many seconds passed (for
    /// what a server does asynchronously, such as establishing a CRD).
    #[serde(default)]
    pub retry_for_seconds: Option<u64>,
}

impl Step {
    /// The request or watch of this step.
    pub fn action(&self) -> Action<'_> {
        match (&self.request, &self.watch, &self.collect) {
            (Some(r), None, None) => Action::Request(r),
            (None, Some(w), None) => Action::Watch(w),
            (None, None, Some(c)) => Action::Collect(c),
            _ => unreachable!("validated at load: exactly one of request/watch/collect"),
        }
    }
}

/// What a step does.
pub enum Action<'a> {
    Request(&'a Request),
    Watch(&'a Watch),
    Collect(&'a Collect),
}

/// An HTTP request.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Request {
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub query: BTreeMap<String, Value>,
    #[serde(default)]
    pub body: Option<Value>,
    /// A body sent verbatim (for malformed input); excludes `body`.
    #[serde(default)]
    pub raw_body: Option<String>,
    #[serde(default)]
    pub content_type: BodyKind,
    /// The Accept header (default `application/json`).
    #[serde(default)]
    pub accept: Option<String>,
}

/// How a request body is encoded (the Content-Type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BodyKind {
    #[default]
    Json,
    Merge,
    JsonPatch,
    Strategic,
    Apply,
}

impl BodyKind {
    pub fn content_type(self) -> &'static str {
        match self {
            BodyKind::Json => "application/json",
            BodyKind::Merge => "application/merge-patch+json",
            BodyKind::JsonPatch => "application/json-patch+json",
            BodyKind::Strategic => "application/strategic-merge-patch+json",
            BodyKind::Apply => "application/apply-patch+yaml",
        }
    }
}

/// A watch request: `GET path?watch=true&...`, collecting events in order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Watch {
    pub path: String,
    #[serde(default)]
    pub query: BTreeMap<String, Value>,
    /// Stop reading after this many non-bookmark events (else read until the
    /// server closes the stream).
    #[serde(default)]
    pub stop_after: Option<usize>,
    /// Give up reading after this many seconds (default: timeoutSeconds + 10).
    #[serde(default)]
    pub read_for_seconds: Option<u64>,
    /// Keep the watch open under this name instead of reading it now; later
    /// steps write and a `collect` step reads what it delivered meanwhile.
    #[serde(default)]
    pub background: Option<String>,
}

/// Reads the events a background watch delivered since it was opened (or
/// since the previous `collect` of it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Collect {
    pub watch: String,
    #[serde(default)]
    pub stop_after: Option<usize>,
    /// Give up reading after this many seconds (default 10).
    #[serde(default)]
    pub read_for_seconds: Option<u64>,
}

/// Expectations on a response.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Expect {
    pub code: Option<u16>,
    /// `reason` of a Status body.
    pub reason: Option<String>,
    pub message_contains: Option<String>,
    /// JSON pointer -> matcher, on the response body.
    #[serde(default)]
    pub fields: BTreeMap<String, Value>,
    /// Watch only: the non-bookmark events, in order (exact count).
    #[serde(default)]
    pub events: Option<Vec<ExpectEvent>>,
    /// Watch only: the server must have closed the stream by itself.
    #[serde(default)]
    pub closed_by_server: Option<bool>,
}

/// One expected watch event; field pointers are relative to the event's object.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ExpectEvent {
    #[serde(rename = "type")]
    pub event_type: String,
    #[serde(default)]
    pub fields: BTreeMap<String, Value>,
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
}

/// Loads every `*.yaml` scenario of `dir`, sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ScenarioError::ReadDir {
        dir: dir.to_owned(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files.iter().map(|f| load_file(f)).collect()
}

/// Loads and validates one scenario file.
pub fn load_file(file: &Path) -> Result<Scenario, ScenarioError> {
    let text = std::fs::read_to_string(file).map_err(|source| ScenarioError::ReadFile {
        file: file.to_owned(),
        source,
    })?;
    let mut scenario: Scenario =
        serde_yaml::from_str(&text).map_err(|source| ScenarioError::Parse {
            file: file.to_owned(),
            source,
        })?;
    scenario.file = file.to_owned();
    validate(&scenario)?;
    Ok(scenario)
}

fn validate(scenario: &Scenario) -> Result<(), ScenarioError> {
    let invalid = |step: &str, problem: &str| ScenarioError::Invalid {
        file: scenario.file.clone(),
        step: step.to_owned(),
        problem: problem.to_owned(),
    };
    if scenario.since == Since::EmbeddedOnly && scenario.why.is_none() {
        return Err(invalid("-", "an embedded-only scenario must say `why`"));
    }
    for step in &scenario.steps {
        let actions = [
            step.request.is_some(),
            step.watch.is_some(),
            step.collect.is_some(),
        ];
        if actions.iter().filter(|a| **a).count() != 1 {
            return Err(invalid(
                &step.name,
                "needs exactly one of `request`, `watch` or `collect`",
            ));
        }
        if step
            .request
            .as_ref()
            .is_some_and(|r| r.body.is_some() && r.raw_body.is_some())
        {
            return Err(invalid(
                &step.name,
                "`body` and `raw-body` exclude each other",
            ));
        }
        if step.v1_20.is_some() && step.differs.is_none() {
            return Err(invalid(
                &step.name,
                "`v1.20` expectations need `differs: reason`",
            ));
        }
        if step.request.is_none() && step.retry_for_seconds.is_some() {
            return Err(invalid(&step.name, "only requests can be retried"));
        }
        if step.request.is_none() && !step.capture.is_empty() {
            return Err(invalid(
                &step.name,
                "capture from watch events under `events`",
            ));
        }
        let reads_events =
            step.collect.is_some() || step.watch.as_ref().is_some_and(|w| w.background.is_none());
        if !reads_events && (step.expect.events.is_some() || step.expect.closed_by_server.is_some())
        {
            return Err(invalid(
                &step.name,
                "`events`/`closed-by-server` need a watch that is read now or a `collect`",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Scenario, ScenarioError> {
        let mut scenario: Scenario = serde_yaml::from_str(yaml).expect("scenario YAML");
        scenario.file = PathBuf::from("inline.yaml");
        validate(&scenario).map(|()| scenario)
    }

    #[test]
    fn a_step_needs_exactly_one_action() {
        let both =
            "name: s\nsteps:\n- name: x\n  request: {method: GET, path: /}\n  watch: {path: /}\n";
        assert!(matches!(parse(both), Err(ScenarioError::Invalid { step, .. }) if step == "x"));
        let none = "name: s\nsteps:\n- name: y\n";
        assert!(matches!(parse(none), Err(ScenarioError::Invalid { step, .. }) if step == "y"));
    }

    #[test]
    fn v1_20_expectations_need_a_reason() {
        let yaml =
            "name: s\nsteps:\n- name: x\n  request: {method: GET, path: /}\n  v1.20: {code: 500}\n";
        assert!(parse(yaml).is_err());
        let yaml = "name: s\nsteps:\n- name: x\n  request: {method: GET, path: /}\n  differs: newer\n  v1.20: {code: 500}\n";
        let scenario = parse(yaml).expect("valid");
        assert_eq!(
            scenario.steps[0].v1_20.as_ref().and_then(|e| e.code),
            Some(500)
        );
    }

    #[test]
    fn events_need_a_watch_that_is_read() {
        let yaml = "name: s\nsteps:\n- name: x\n  watch: {path: /, background: w}\n  expect: {events: []}\n";
        assert!(parse(yaml).is_err());
        let yaml = "name: s\nsteps:\n- name: x\n  collect: {watch: w}\n  expect: {events: []}\n";
        assert!(parse(yaml).is_ok());
    }

    #[test]
    fn embedded_only_scenarios_say_why() {
        let yaml = "name: s\nsince: embedded-only\nsteps: []\n";
        assert!(parse(yaml).is_err());
        let yaml = "name: s\nsince: embedded-only\nwhy: v1.20 lacks it\nsteps: []\n";
        assert_eq!(parse(yaml).expect("valid").since, Since::EmbeddedOnly);
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let yaml =
            "name: s\nsteps:\n- name: x\n  request: {method: GET, path: /}\n  expect: {cod: 200}\n";
        assert!(serde_yaml::from_str::<Scenario>(yaml).is_err());
    }
}
