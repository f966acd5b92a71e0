//! Runs one scenario against one server and records every step's outcome.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::matcher;
use super::scenario::{Action, Collect, Expect, ExpectEvent, Request, Scenario, Step, Watch};
use super::transport::{OpenWatch, ServerKind, Target, TransportError, WatchOutcome, is_bookmark};
use super::vars::{Vars, VarsError};

/// Errors that stop a step from being sent (as opposed to expectation misses).
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Vars(#[from] VarsError),
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error("cannot encode the request body: {0}")]
    Encode(serde_json::Error),
    #[error("no background watch named {0:?} is open")]
    NoSuchWatch(String),
}

/// Background watches of a scenario run, by name.
type OpenWatches = HashMap<String, OpenWatch>;

/// The observable result of a step, compared across servers.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub code: u16,
    /// `reason` of a Status body (errors, in-stream watch errors).
    pub reason: Option<String>,
    pub message: Option<String>,
    /// Watch only: the non-bookmark event types, in order.
    pub event_types: Vec<String>,
    /// Watch only: how many BOOKMARKs arrived (reported, never compared:
    /// clients must not rely on their frequency).
    pub bookmarks: usize,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.code)?;
        if let Some(reason) = &self.reason {
            write!(f, " {reason}")?;
        }
        if !self.event_types.is_empty() {
            write!(f, " [{}]", self.event_types.join(","))?;
        }
        if self.bookmarks > 0 {
            write!(f, " +{} BOOKMARK", self.bookmarks)?;
        }
        Ok(())
    }
}

/// What happened to one step on one server.
#[derive(Debug, Clone)]
pub enum StepRun {
    /// The step does not apply to this server (the reason says why).
    Skipped(String),
    /// The step could not be sent or read.
    Error(String),
    /// The step ran; `failures` lists every unmet expectation.
    Ran {
        outcome: Outcome,
        failures: Vec<String>,
    },
}

impl StepRun {
    pub fn failures(&self) -> Vec<String> {
        match self {
            StepRun::Skipped(_) => Vec::new(),
            StepRun::Error(e) => vec![e.clone()],
            StepRun::Ran { failures, .. } => failures.clone(),
        }
    }
}

/// One scenario's run on one server.
#[derive(Debug, Clone)]
pub struct ScenarioRun {
    pub server: ServerKind,
    pub namespace: String,
    /// The namespace preamble's failure, if it failed.
    pub setup_error: Option<String>,
    pub steps: Vec<StepRun>,
    /// Final variables, used to normalise messages.
    pub vars: Vars,
}

/// A fresh namespace name per scenario and server: the real server persists.
pub fn unique_namespace() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    let suffix: String = (0..10)
        .map(|_| ALPHABET[rand::Rng::random_range(&mut rng, 0..ALPHABET.len())] as char)
        .collect();
    format!("diff-{suffix}")
}

/// Runs every step of `scenario` on `target` in its own namespace.
pub async fn run_scenario(scenario: &Scenario, target: &Target) -> ScenarioRun {
    let namespace = unique_namespace();
    let mut vars = Vars::default();
    vars.set("ns", json!(namespace));
    let setup_error = create_namespace(target, &namespace).await.err();
    let mut steps = Vec::with_capacity(scenario.steps.len());
    let mut watches = OpenWatches::new();
    for step in &scenario.steps {
        let run = if setup_error.is_some() {
            StepRun::Skipped("namespace setup failed".into())
        } else {
            run_step(step, target, &mut vars, &mut watches).await
        };
        steps.push(run);
    }
    ScenarioRun {
        server: target.kind,
        namespace,
        setup_error,
        steps,
        vars,
    }
}

async fn create_namespace(target: &Target, namespace: &str) -> Result<(), String> {
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
    let response = target
        .send(
            "POST",
            "/api/v1/namespaces",
            "application/json",
            Some(body.to_string().into_bytes()),
        )
        .await
        .map_err(|e| format!("creating namespace {namespace}: {e}"))?;
    if response.code == 201 {
        Ok(())
    } else {
        Err(format!(
            "creating namespace {namespace}: expected 201, got {} {}",
            response.code, response.body
        ))
    }
}

/// The expectations that apply to this server, or why the step is skipped.
fn expectation_for(step: &Step, server: ServerKind) -> Result<&Expect, String> {
    match (&step.differs, server) {
        (None, _) | (Some(_), ServerKind::Embedded) => Ok(&step.expect),
        (Some(reason), ServerKind::Real) => step
            .v1_20
            .as_ref()
            .ok_or_else(|| format!("differs from v1.20: {reason}")),
    }
}

async fn run_step(
    step: &Step,
    target: &Target,
    vars: &mut Vars,
    watches: &mut OpenWatches,
) -> StepRun {
    let expect = match expectation_for(step, target.kind) {
        Ok(expect) => expect,
        Err(reason) => return StepRun::Skipped(reason),
    };
    let result = match step.action() {
        Action::Request(request) => match step.retry_for_seconds {
            Some(seconds) => {
                retry_request(request, expect, &step.capture, target, vars, seconds).await
            }
            None => run_request(request, expect, &step.capture, target, vars).await,
        },
        Action::Watch(watch) => run_watch(watch, expect, target, vars, watches).await,
        Action::Collect(collect) => run_collect(collect, expect, vars, watches).await,
    };
    match result {
        Ok((outcome, failures)) => StepRun::Ran { outcome, failures },
        Err(e) => StepRun::Error(e.to_string()),
    }
}

/// Resends until the expectations hold (the last attempt's outcome counts).
async fn retry_request(
    request: &Request,
    expect: &Expect,
    capture: &BTreeMap<String, String>,
    target: &Target,
    vars: &mut Vars,
    seconds: u64,
) -> Result<(Outcome, Vec<String>), StepError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    loop {
        let (outcome, failures) = run_request(request, expect, capture, target, vars).await?;
        if failures.is_empty() || tokio::time::Instant::now() >= deadline {
            return Ok((outcome, failures));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn run_request(
    request: &Request,
    expect: &Expect,
    capture: &BTreeMap<String, String>,
    target: &Target,
    vars: &mut Vars,
) -> Result<(Outcome, Vec<String>), StepError> {
    let uri = build_uri(&request.path, &request.query, vars, &[])?;
    let body = match (&request.body, &request.raw_body) {
        (Some(body), _) => {
            Some(serde_json::to_vec(&vars.substitute(body)?).map_err(StepError::Encode)?)
        }
        (None, Some(raw)) => Some(vars.substitute_str(raw)?.into_bytes()),
        (None, None) => None,
    };
    let method = request.method.to_uppercase();
    let accept = request.accept.as_deref().unwrap_or("application/json");
    let response = target
        .send_accepting(
            &method,
            &uri,
            request.content_type.content_type(),
            accept,
            body,
        )
        .await?;
    let outcome = Outcome {
        code: response.code,
        reason: status_field(&response.body, "reason"),
        message: status_field(&response.body, "message"),
        event_types: Vec::new(),
        bookmarks: 0,
    };
    let mut failures = Vec::new();
    check_status(expect, &outcome, vars, &mut failures)?;
    check_fields(
        &expect.fields,
        &response.body,
        response.received_at,
        vars,
        "",
        &mut failures,
    )?;
    capture_fields(capture, &response.body, vars, "", &mut failures);
    if !failures.is_empty() {
        failures.push(format!("response body: {}", abbreviate(&response.body)));
    }
    Ok((outcome, failures))
}

async fn run_watch(
    watch: &Watch,
    expect: &Expect,
    target: &Target,
    vars: &mut Vars,
    watches: &mut OpenWatches,
) -> Result<(Outcome, Vec<String>), StepError> {
    let uri = build_uri(&watch.path, &watch.query, vars, &[("watch", "true")])?;
    let started = Utc::now();
    let mut stream = target.open_watch(&uri).await?;
    let result = match &watch.background {
        Some(name) => {
            let opened = WatchOutcome {
                code: stream.code,
                status: stream.status.clone(),
                events: Vec::new(),
                closed_by_server: false,
            };
            watches.insert(name.clone(), stream);
            opened
        }
        None => {
            let timeout_seconds = watch
                .query
                .get("timeoutSeconds")
                .and_then(matcher::as_int)
                .unwrap_or(5) as u64;
            let read_for = watch.read_for_seconds.unwrap_or(timeout_seconds + 10);
            stream
                .collect(watch.stop_after, Duration::from_secs(read_for))
                .await?
        }
    };
    evaluate_watch(&result, expect, started, vars)
}

async fn run_collect(
    collect: &Collect,
    expect: &Expect,
    vars: &mut Vars,
    watches: &mut OpenWatches,
) -> Result<(Outcome, Vec<String>), StepError> {
    let stream = watches
        .get_mut(&collect.watch)
        .ok_or_else(|| StepError::NoSuchWatch(collect.watch.clone()))?;
    let started = Utc::now();
    let read_for = Duration::from_secs(collect.read_for_seconds.unwrap_or(10));
    let result = stream.collect(collect.stop_after, read_for).await?;
    evaluate_watch(&result, expect, started, vars)
}

/// Checks what a watch delivered against the expectations.
fn evaluate_watch(
    result: &WatchOutcome,
    expect: &Expect,
    started: DateTime<Utc>,
    vars: &mut Vars,
) -> Result<(Outcome, Vec<String>), StepError> {
    let (bookmarks, events): (Vec<&Value>, Vec<&Value>) =
        result.events.iter().partition(|e| is_bookmark(e));
    let in_stream_error = events
        .iter()
        .find(|e| e["type"] == "ERROR")
        .map(|e| &e["object"]);
    let status = in_stream_error.unwrap_or(&result.status);
    let outcome = Outcome {
        code: result.code,
        reason: status_field(status, "reason"),
        message: status_field(status, "message"),
        event_types: events
            .iter()
            .map(|e| e["type"].as_str().unwrap_or("?").to_owned())
            .collect(),
        bookmarks: bookmarks.len(),
    };
    let mut failures = Vec::new();
    check_status(expect, &outcome, vars, &mut failures)?;
    check_fields(
        &expect.fields,
        &result.status,
        started,
        vars,
        "",
        &mut failures,
    )?;
    for bookmark in &bookmarks {
        if let Err(problem) = bookmark_is_metadata_only(&bookmark["object"]) {
            failures.push(format!("BOOKMARK {problem}: {}", bookmark["object"]));
        }
    }
    if let Some(expected) = expect.closed_by_server
        && expected != result.closed_by_server
    {
        failures.push(format!(
            "stream closed by server: expected {expected}, found {}",
            result.closed_by_server
        ));
    }
    if let Some(expected_events) = &expect.events {
        check_events(expected_events, &events, started, vars, &mut failures)?;
    }
    if !failures.is_empty() {
        let seen: Vec<String> = result.events.iter().map(abbreviate_event).collect();
        failures.push(format!("events seen: {}", seen.join(" | ")));
    }
    Ok((outcome, failures))
}

fn check_events(
    expected: &[ExpectEvent],
    events: &[&Value],
    started: DateTime<Utc>,
    vars: &mut Vars,
    failures: &mut Vec<String>,
) -> Result<(), StepError> {
    if expected.len() != events.len() {
        let want: Vec<&str> = expected.iter().map(|e| e.event_type.as_str()).collect();
        let got: Vec<&str> = events
            .iter()
            .map(|e| e["type"].as_str().unwrap_or("?"))
            .collect();
        failures.push(format!(
            "expected {} events [{}], got {} [{}]",
            want.len(),
            want.join(","),
            got.len(),
            got.join(",")
        ));
    }
    for (i, (want, got)) in expected.iter().zip(events).enumerate() {
        if got["type"] != want.event_type.as_str() {
            failures.push(format!(
                "event {i}: expected type {}, found {}",
                want.event_type, got["type"]
            ));
        }
        let context = format!("event {i} ({}) ", want.event_type);
        check_fields(
            &want.fields,
            &got["object"],
            started,
            vars,
            &context,
            failures,
        )?;
        capture_fields(&want.capture, &got["object"], vars, &context, failures);
    }
    Ok(())
}

fn check_status(
    expect: &Expect,
    outcome: &Outcome,
    vars: &Vars,
    failures: &mut Vec<String>,
) -> Result<(), StepError> {
    if let Some(code) = expect.code
        && code != outcome.code
    {
        failures.push(format!("expected code {code}, found {}", outcome.code));
    }
    if let Some(reason) = &expect.reason
        && Some(reason) != outcome.reason.as_ref()
    {
        failures.push(format!(
            "expected reason {reason}, found {:?}",
            outcome.reason
        ));
    }
    if let Some(part) = &expect.message_contains {
        let part = vars.substitute_str(part)?;
        let message = outcome.message.as_deref().unwrap_or("");
        if !message.contains(&part) {
            failures.push(format!(
                "expected message containing {part:?}, found {message:?}"
            ));
        }
    }
    Ok(())
}

fn check_fields(
    fields: &BTreeMap<String, Value>,
    body: &Value,
    now: DateTime<Utc>,
    vars: &Vars,
    context: &str,
    failures: &mut Vec<String>,
) -> Result<(), StepError> {
    for (pointer, matcher) in fields {
        let pointer = vars.substitute_str(pointer)?;
        let matcher = vars.substitute(matcher)?;
        if let Err(miss) = matcher::check(body.pointer(&pointer), &matcher, now) {
            failures.push(format!("{context}{pointer}: {miss}"));
        }
    }
    Ok(())
}

fn capture_fields(
    capture: &BTreeMap<String, String>,
    body: &Value,
    vars: &mut Vars,
    context: &str,
    failures: &mut Vec<String>,
) {
    for (name, pointer) in capture {
        match body.pointer(pointer) {
            Some(value) => vars.set(name, value.clone()),
            None => failures.push(format!("{context}capture {name}: nothing at {pointer}")),
        }
    }
}

/// A bookmark's object may only carry kind, apiVersion and metadata.resourceVersion.
fn bookmark_is_metadata_only(object: &Value) -> Result<(), String> {
    let Some(map) = object.as_object() else {
        return Err("object is not a map".into());
    };
    if let Some(extra) = map
        .keys()
        .find(|k| !["kind", "apiVersion", "metadata"].contains(&k.as_str()))
    {
        return Err(format!("carries {extra}"));
    }
    let metadata = map.get("metadata").and_then(Value::as_object);
    let Some(metadata) = metadata else {
        return Err("has no metadata".into());
    };
    if !metadata
        .get("resourceVersion")
        .is_some_and(Value::is_string)
    {
        return Err("has no metadata.resourceVersion".into());
    }
    // Go serialises an unset creationTimestamp as null; only non-null fields count.
    match metadata
        .iter()
        .find(|(k, v)| k.as_str() != "resourceVersion" && !v.is_null())
    {
        Some((k, _)) => Err(format!("carries metadata.{k}")),
        None => Ok(()),
    }
}

fn status_field(body: &Value, field: &str) -> Option<String> {
    (body["kind"] == "Status")
        .then(|| body[field].as_str().map(str::to_owned))
        .flatten()
        .filter(|s| !s.is_empty())
}

fn build_uri(
    path: &str,
    query: &BTreeMap<String, Value>,
    vars: &Vars,
    extra: &[(&str, &str)],
) -> Result<String, VarsError> {
    let mut uri = vars.substitute_str(path)?;
    let mut pairs: Vec<(String, String)> = extra
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    for (key, value) in query {
        let value = match vars.substitute(value)? {
            Value::String(s) => s,
            other => other.to_string(),
        };
        pairs.push((key.clone(), value));
    }
    for (i, (key, value)) in pairs.iter().enumerate() {
        uri.push(if i == 0 { '?' } else { '&' });
        uri.push_str(&percent_encode(key));
        uri.push('=');
        uri.push_str(&percent_encode(value));
    }
    Ok(uri)
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn abbreviate(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 600 {
        format!("{}…", &text[..text.floor_char_boundary(600)])
    } else {
        text
    }
}

fn abbreviate_event(event: &Value) -> String {
    let object = &event["object"];
    format!(
        "{} {} rv={} {}",
        event["type"].as_str().unwrap_or("?"),
        object["metadata"]["name"].as_str().unwrap_or(""),
        object["metadata"]["resourceVersion"].as_str().unwrap_or(""),
        object["message"].as_str().unwrap_or("")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bookmarks_may_only_carry_the_resource_version() {
        let ok = json!({"kind": "Pod", "apiVersion": "v1",
            "metadata": {"resourceVersion": "12", "creationTimestamp": null}});
        assert!(bookmark_is_metadata_only(&ok).is_ok());
        let named = json!({"kind": "Pod", "metadata": {"resourceVersion": "12", "name": "p"}});
        assert!(bookmark_is_metadata_only(&named).is_err());
        let with_spec = json!({"metadata": {"resourceVersion": "12"}, "spec": {}});
        assert!(bookmark_is_metadata_only(&with_spec).is_err());
        assert!(bookmark_is_metadata_only(&json!({"metadata": {}})).is_err());
    }

    #[test]
    fn queries_are_percent_encoded_after_substitution() {
        let mut vars = Vars::default();
        vars.set("ns", json!("diff-x"));
        let mut query = BTreeMap::new();
        query.insert("fieldSelector".to_owned(), json!("spec.nodeName!=n1,a==b"));
        query.insert("limit".to_owned(), json!(2));
        let uri = build_uri(
            "/api/v1/namespaces/${ns}/pods",
            &query,
            &vars,
            &[("watch", "true")],
        )
        .unwrap();
        assert_eq!(
            uri,
            "/api/v1/namespaces/diff-x/pods?watch=true&fieldSelector=spec.nodeName%21%3Dn1%2Ca%3D%3Db&limit=2"
        );
    }

    #[test]
    fn status_fields_are_read_from_status_bodies_only() {
        let status = json!({"kind": "Status", "reason": "Conflict", "message": "m"});
        assert_eq!(status_field(&status, "reason").as_deref(), Some("Conflict"));
        let pod = json!({"kind": "Pod", "reason": "Evicted"});
        assert_eq!(status_field(&pod, "reason"), None);
    }
}
