//! ttl-after-finished: a finished Job (`Complete` or `Failed` true) with
//! `spec.ttlSecondsAfterFinished` is deleted, foreground, once the TTL has passed
//! since the condition's `lastTransitionTime`.
//!
//! The server has no Job controller and no garbage collector: the harness writes
//! the status, and a foreground delete leaves the Job deleting with the
//! `foregroundDeletion` finalizer (which is how the propagation shows).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Timelike, Utc};
use k8s_openapi::api::batch::v1::Job;
use kube::Api;
use kube::api::ListParams;
use serde_json::{Value, json};

use crate::peer::{Case, Harness, Peer, RUN_LABEL, State, poll_until};

pub const PEER: Peer = Peer {
    name: "ttl-after-finished",
    kcm_flags: &["--feature-gates=TTLAfterFinished=true"],
    module: "rekon_guest_ttl_after_finished_ts",
};

/// One delete per expired Job: complete, failed, old, extended.
pub const MIN_WRITES: u64 = 4;

pub const RESOURCE: &str = "jobs";

const NAMESPACE: &str = "default";
const FOREGROUND: &str = "foregroundDeletion";
/// The harness's finalizer on the Job it deletes before it finishes.
const HOLD: &str = "example.com/peers-hold";
/// `extended`: its TTL, raised to [`EXTENDED_TTL`] one second after it finished.
const EXTENDED_FIRST_TTL: i64 = 3;
const EXTENDED_TTL: i64 = 10;
/// How late a deletion may be after its TTL expired.
const SLACK: Duration = Duration::from_secs(5);

struct JobCase {
    name: &'static str,
    ttl: Option<i64>,
    /// The finished condition's type, and how long ago it became true.
    finished: Option<(&'static str, i64)>,
    expected: State,
}

fn cases() -> Vec<JobCase> {
    let deleted = || State::deleting(&[FOREGROUND]);
    let case = |name, ttl, finished, expected| JobCase {
        name,
        ttl,
        finished,
        expected,
    };
    vec![
        case("complete", Some(2), Some(("Complete", 0)), deleted()),
        case("failed", Some(2), Some(("Failed", 0)), deleted()),
        case("old", Some(2), Some(("Complete", 3600)), deleted()),
        case(
            "extended",
            Some(EXTENDED_FIRST_TTL),
            Some(("Complete", 0)),
            deleted(),
        ),
        case("running", Some(2), None, State::kept(&[])),
        case("no-ttl", None, Some(("Complete", 0)), State::kept(&[])),
        case(
            "held",
            Some(2),
            Some(("Complete", 0)),
            State::deleting(&[HOLD]),
        ),
    ]
}

fn job(prefix: &str, name: &str, ttl: Option<i64>, finalizers: &[&str]) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": { "name": format!("{prefix}-{name}"), "labels": { RUN_LABEL: prefix },
                      "finalizers": finalizers },
        "spec": { "ttlSecondsAfterFinished": ttl, "template": { "spec": {
            "restartPolicy": "Never", "containers": [{ "name": "c", "image": "busybox" }] } } }
    })
}

/// The status a Job controller would write when the Job finished at `at`.
fn finished_status(kind: &str, at: DateTime<Utc>) -> Value {
    let at = at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut status = json!({ "startTime": at, "conditions": [
        { "type": kind, "status": "True", "lastProbeTime": at, "lastTransitionTime": at } ] });
    if kind == "Complete" {
        status["completionTime"] = json!(at);
        status["succeeded"] = json!(1);
    } else {
        status["failed"] = json!(1);
    }
    json!({ "status": status })
}

fn api(h: &Harness) -> Api<Job> {
    Api::namespaced(h.client.clone(), NAMESPACE)
}

/// Whether the server keeps `spec.ttlSecondsAfterFinished` (v1.20 drops it
/// unless started with `--feature-gates=TTLAfterFinished=true`).
pub async fn server_keeps_ttl(h: &Harness, prefix: &str) -> anyhow::Result<bool> {
    let jobs = api(h);
    let created = h
        .create(&jobs, job(prefix, "probe", Some(3600), &[]))
        .await?;
    h.delete(&jobs, &format!("{prefix}-probe")).await?;
    Ok(created.spec.and_then(|s| s.ttl_seconds_after_finished) == Some(3600))
}

async fn states(h: &Harness, prefix: &str) -> anyhow::Result<BTreeMap<String, State>> {
    let list = api(h)
        .list(&ListParams::default().labels(&format!("{RUN_LABEL}={prefix}")))
        .await?;
    let mut states: BTreeMap<String, State> = cases()
        .iter()
        .map(|c| (c.name.to_string(), State::Gone))
        .collect();
    states.insert("canary".into(), State::Gone);
    for job in &list.items {
        let name = job.metadata.name.as_deref().unwrap_or_default();
        if let Some(case) = name.strip_prefix(prefix).and_then(|n| n.strip_prefix('-')) {
            states.insert(case.to_string(), State::of(Some(&job.metadata)));
        }
    }
    Ok(states)
}

fn now_in_seconds() -> DateTime<Utc> {
    Utc::now().with_nanosecond(0).expect("zero nanoseconds")
}

/// A Job with TTL 0 that finished an hour ago is deleted: the controller runs.
pub async fn canary(h: &Harness, prefix: &str) -> anyhow::Result<bool> {
    let jobs = api(h);
    let name = format!("{prefix}-canary");
    h.create(&jobs, job(prefix, "canary", Some(0), &[])).await?;
    let finished = now_in_seconds() - chrono::Duration::hours(1);
    h.merge(&jobs, &name, true, finished_status("Complete", finished))
        .await?;
    Ok(poll_until(
        Duration::from_secs(60),
        Duration::from_millis(100),
        move || async move {
            states(h, prefix)
                .await
                .is_ok_and(|s| s["canary"] != State::kept(&[]))
        },
    )
    .await)
}

/// When each case's Job expires (its final TTL after its finish time) and when
/// it first changed after the script set it up.
struct Timing {
    expires: Option<DateTime<Utc>>,
    /// When it could be deleted at the earliest: expiry, or its status write if later.
    eligible: Option<DateTime<Utc>>,
    changed: Option<DateTime<Utc>>,
}

pub async fn script(h: &Harness, prefix: &str) -> anyhow::Result<(Vec<Case>, Vec<String>)> {
    let jobs = api(h);
    let cases = cases();
    for case in &cases {
        let finalizers: &[&str] = if case.name == "held" { &[HOLD] } else { &[] };
        h.create(&jobs, job(prefix, case.name, case.ttl, finalizers))
            .await?;
    }
    h.delete(&jobs, &format!("{prefix}-held")).await?;
    let mut timings = BTreeMap::new();
    for case in &cases {
        let Some((kind, ago)) = case.finished else {
            continue;
        };
        let finished = now_in_seconds() - chrono::Duration::seconds(ago);
        h.merge(
            &jobs,
            &format!("{prefix}-{}", case.name),
            true,
            finished_status(kind, finished),
        )
        .await?;
        let written = Utc::now();
        let ttl = match case.name {
            "extended" => Some(EXTENDED_TTL),
            _ => case.ttl,
        };
        let expires = ttl.map(|ttl| finished + chrono::Duration::seconds(ttl));
        let timing = Timing {
            expires,
            eligible: expires.map(|e| e.max(written)),
            changed: None,
        };
        timings.insert(case.name, timing);
    }
    // As the script left them, before any controller acted.
    let initial = |case: &str| match case {
        "held" => State::deleting(&[HOLD]),
        _ => State::kept(&[]),
    };
    let last = timings
        .values()
        .filter_map(|t| t.eligible)
        .max()
        .expect("cases that expire");
    let until = last + chrono::Duration::from_std(SLACK)?;
    // Before its first TTL runs out, `extended` gets a longer one.
    let extend_at = Utc::now() + chrono::Duration::seconds(1);
    let mut extended = false;
    let mut observed = states(h, prefix).await?;
    while Utc::now() < until {
        if !extended && Utc::now() >= extend_at {
            h.merge(
                &jobs,
                &format!("{prefix}-extended"),
                false,
                json!({"spec": {"ttlSecondsAfterFinished": EXTENDED_TTL}}),
            )
            .await?;
            extended = true;
        }
        if let Ok(now_states) = states(h, prefix).await {
            let now = Utc::now();
            for case in &cases {
                let timing = timings.entry(case.name).or_insert(Timing {
                    expires: None,
                    eligible: None,
                    changed: None,
                });
                if timing.changed.is_none() && now_states[case.name] != initial(case.name) {
                    timing.changed = Some(now);
                }
            }
            observed = now_states;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let mut problems = Vec::new();
    let results = cases
        .iter()
        .map(|case| {
            let timing = &timings[case.name];
            let note = match (timing.changed, timing.expires, timing.eligible) {
                (Some(changed), Some(expires), Some(eligible))
                    if case.expected == State::deleting(&[FOREGROUND]) =>
                {
                    // Seen after the fact: seen before expiry is deleted before it.
                    if changed < expires {
                        problems.push(format!(
                            "{}: deleted {:.2} s before its TTL expired",
                            case.name,
                            secs(expires - changed)
                        ));
                    } else if changed > eligible + chrono::Duration::from_std(SLACK).unwrap() {
                        problems.push(format!(
                            "{}: deleted {:.1} s after its TTL expired",
                            case.name,
                            secs(changed - eligible)
                        ));
                    }
                    format!("deleted {:+.2} s after due", secs(changed - eligible))
                }
                (Some(_), ..) => "changed".into(),
                (None, ..) => String::new(),
            };
            Case {
                name: case.name,
                expected: case.expected.clone(),
                observed: observed[case.name].clone(),
                note,
            }
        })
        .collect();
    Ok((results, problems))
}

fn secs(d: chrono::Duration) -> f64 {
    d.num_milliseconds() as f64 / 1000.0
}

pub async fn clean_up(h: &Harness, prefix: &str) -> anyhow::Result<()> {
    h.clean_up(&api(h), prefix).await
}
