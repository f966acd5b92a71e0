//! End-to-end: the TypeScript controller modules (guests/ttl-after-finished,
//! guests/sample-controller), built by `make guests` as
//! `rekon_guest_<name>_ts.wasm`, run by the host's generic controller against
//! the embedded API server. No host file names either of them.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use rekon_controllers::generic::ControllerModule;
use rekon_controllers::journal::{Entry, Journal};
use rekon_simulate::{ClusterOptions, Deciders, Report, Settle, Step, simulate};
use rekon_tests::sim::*;
use serde_json::{Value, json};

// Each module is a 12 MB componentize-js component: compiled once per test binary.
static TTL: LazyLock<ControllerModule> =
    LazyLock::new(|| controller_module("rekon_guest_ttl_after_finished_ts"));
static SAMPLE: LazyLock<ControllerModule> =
    LazyLock::new(|| controller_module("rekon_guest_sample_controller_ts"));

async fn run_module(
    module: &ControllerModule,
    state: Vec<Value>,
    steps: Vec<Step>,
    settle: Settle,
) -> Report {
    let options = ClusterOptions {
        controllers: module.name().parse().unwrap(),
        modules: vec![module.clone()],
        ..ClusterOptions::default()
    };
    simulate(
        state,
        steps,
        options,
        settle,
        Deciders::new(),
        Arc::new(Journal::new()),
    )
    .await
    .expect("simulation runs")
}

/// Journal entries of `resource` named `name`: (verb, subresource, code).
fn entries_of(report: &Report, resource: &str, name: &str) -> Vec<(String, Option<String>, u16)> {
    writes(&report.journal)
        .into_iter()
        .filter(|(_, r, _, n, _)| r == resource && n == name)
        .map(|(verb, _, subresource, _, code)| (verb, subresource, code))
        .collect()
}

/// The outcomes of the decisions of `controller` for keys naming `name`.
fn outcomes(report: &Report, controller: &str, name: &str) -> Vec<Value> {
    report
        .journal
        .entries()
        .into_iter()
        .filter_map(|e| match e {
            Entry::Decision {
                controller: c,
                key,
                outcome,
                ..
            // The journal keeps the world's decision: `{"decide": …}`.
            } if c == controller && key.ends_with(name) => {
                Some(outcome.get("decide").cloned().unwrap_or(outcome))
            }
            _ => None,
        })
        .collect()
}

// ---- ttl-after-finished ----

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A Job in `ns`; `finished`: the type of its finished condition and when.
fn job(name: &str, ttl: Option<i64>, finished: Option<(&str, DateTime<Utc>)>) -> Value {
    let mut job = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": { "namespace": "ns", "name": name, "uid": format!("uid-{name}") },
        "spec": { "template": { "spec": { "restartPolicy": "Never",
            "containers": [{ "name": "pi", "image": "perl:5.34" }] } } }
    });
    if let Some(ttl) = ttl {
        job["spec"]["ttlSecondsAfterFinished"] = json!(ttl);
    }
    if let Some((condition, at)) = finished {
        job["status"] = json!({ "conditions": [{ "type": condition, "status": "True",
            "lastTransitionTime": rfc3339(at) }] });
    }
    job
}

fn find_job<'a>(report: &'a Report, name: &str) -> Option<&'a Value> {
    find(&report.objects, "Job", "ns", name)
}

#[tokio::test(flavor = "multi_thread")]
async fn expired_jobs_are_deleted_after_a_fresh_read_and_the_others_are_kept() {
    let now = Utc::now();
    let state = vec![
        job(
            "complete-expired",
            Some(10),
            Some(("Complete", now - chrono::Duration::hours(1))),
        ),
        job(
            "failed-expired",
            Some(0),
            Some(("Failed", now - chrono::Duration::minutes(1))),
        ),
        job("running", Some(0), None),
        job(
            "no-ttl",
            None,
            Some(("Complete", now - chrono::Duration::days(1))),
        ),
        job("long-ttl", Some(3600), Some(("Complete", now))),
    ];
    let report = run_module(&TTL, state, vec![], quick()).await;
    report
        .converged
        .as_ref()
        .expect("converged: the long TTL is due after the settle bound");
    for name in ["complete-expired", "failed-expired"] {
        assert!(find_job(&report, name).is_none(), "{name} deleted");
        assert_eq!(
            entries_of(&report, "jobs", name),
            [("get".into(), None, 200), ("delete".into(), None, 200)],
            "{name}: one fresh read, then one delete"
        );
        let delete = report.journal.entries().into_iter().find_map(|e| match e {
            Entry::Write {
                verb,
                name: n,
                preconditions,
                ..
            } if verb == "delete" && n == name => Some(preconditions),
            _ => None,
        });
        let preconditions = delete.expect("a delete");
        assert_eq!(
            preconditions.uid.as_deref(),
            Some(format!("uid-{name}").as_str())
        );
        assert!(
            preconditions.resource_version.is_some(),
            "{name}: delete conditional on the fresh resourceVersion"
        );
    }
    for name in ["running", "no-ttl", "long-ttl"] {
        assert!(find_job(&report, name).is_some(), "{name} kept");
        assert!(
            entries_of(&report, "jobs", name).is_empty(),
            "{name}: no read, no write"
        );
    }
    let long = outcomes(&report, "ttl-after-finished", "long-ttl");
    let requeue = long[0]["actions"][0]["requeue-after"]
        .as_u64()
        .expect("requeue-after");
    assert!(
        (3_595_000..=3_600_000).contains(&requeue),
        "decided again when the TTL expires: {requeue} ms"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_is_deleted_when_its_ttl_expires_without_polling() {
    // 15 s: loading the module (a 12 MB component, compiled on a debug host)
    // must not eat the TTL before the first decision.
    let state = vec![job("soon", Some(15), Some(("Complete", Utc::now())))];
    let settle = Settle {
        requeue_bound: Duration::from_secs(30),
        timeout: Duration::from_secs(90),
        ..quick()
    };
    let report = run_module(&TTL, state, vec![], settle).await;
    report.converged.as_ref().expect("converged");
    assert!(
        find_job(&report, "soon").is_none(),
        "deleted once its TTL passed"
    );
    let decided = outcomes(&report, "ttl-after-finished", "soon");
    let first = decided[0]["actions"][0]["requeue-after"]
        .as_u64()
        .unwrap_or_else(|| panic!("the first decision waits: {decided:?}"));
    assert!(
        (1_000..=15_500).contains(&first),
        "requeued for the time left: {first} ms"
    );
    // Wait, read, delete (and the deleting Job once more): a handful, not a poll.
    assert!(
        decided.len() <= 8,
        "{} decisions: {decided:?}",
        decided.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ttl_changed_later_is_re_evaluated() {
    let state = vec![job(
        "pi",
        Some(3600),
        Some(("Complete", Utc::now() - chrono::Duration::minutes(5))),
    )];
    let shortened = steps(
        "- patch: { apiVersion: batch/v1, kind: Job, namespace: ns, name: pi, type: merge,
             patch: { spec: { ttlSecondsAfterFinished: 60 } } }",
    );
    let report = run_module(&TTL, state, shortened, quick()).await;
    report.converged.as_ref().expect("converged");
    assert!(
        find_job(&report, "pi").is_none(),
        "expired under the new TTL: deleted"
    );
    assert_eq!(
        entries_of(&report, "jobs", "pi"),
        [("get".into(), None, 200), ("delete".into(), None, 200)]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_already_being_deleted_is_left_alone() {
    let mut deleting = job(
        "going",
        Some(0),
        Some(("Complete", Utc::now() - chrono::Duration::hours(1))),
    );
    deleting["metadata"]["deletionTimestamp"] = json!(DELETED_AT);
    deleting["metadata"]["finalizers"] = json!(["example.com/hold"]);
    let report = run_module(&TTL, vec![deleting], vec![], quick()).await;
    report.converged.as_ref().expect("converged");
    assert!(
        find_job(&report, "going").is_some(),
        "its finalizer holds it"
    );
    assert!(
        entries_of(&report, "jobs", "going").is_empty(),
        "no read, no write"
    );
    assert!(
        !outcomes(&report, "ttl-after-finished", "going").is_empty(),
        "it was decided"
    );
}

// ---- sample-controller ----

const FOO_API: &str = "samplecontroller.k8s.io/v1alpha1";

fn foo(name: &str, deployment: Option<&str>, replicas: i64) -> Value {
    let mut object = json!({
        "apiVersion": FOO_API, "kind": "Foo",
        "metadata": { "namespace": "ns", "name": name, "uid": format!("uid-{name}") },
        "spec": { "replicas": replicas }
    });
    if let Some(deployment) = deployment {
        object["spec"]["deploymentName"] = json!(deployment);
    }
    object
}

/// A Deployment, controlled by the Foo `owner` if given.
fn deployment(name: &str, owner: Option<&str>, replicas: i64, available: i64) -> Value {
    let labels = json!({ "app": "nginx", "controller": owner.unwrap_or("someone-else") });
    let mut deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "namespace": "ns", "name": name, "uid": format!("uid-{name}") },
        "spec": { "replicas": replicas, "selector": { "matchLabels": labels },
                  "template": { "metadata": { "labels": labels },
                                "spec": { "containers": [{ "name": "nginx", "image": "nginx:latest" }] } } },
        "status": { "availableReplicas": available }
    });
    if let Some(owner) = owner {
        deployment["metadata"]["ownerReferences"] = json!([{ "apiVersion": FOO_API, "kind": "Foo",
            "name": owner, "uid": format!("uid-{owner}"), "controller": true, "blockOwnerDeletion": true }]);
    }
    deployment
}

fn find_foo<'a>(report: &'a Report, name: &str) -> &'a Value {
    find(&report.objects, "Foo", "ns", name).expect("the Foo")
}

fn find_deployment<'a>(report: &'a Report, name: &str) -> Option<&'a Value> {
    find(&report.objects, "Deployment", "ns", name)
}

/// The messages of the Events about the Foo `name` (a repeated Event is one
/// object: kube's recorder counts repeats in its series).
fn foo_events(report: &Report, name: &str) -> Vec<String> {
    let mut notes = event_notes(&report.objects, "Foo", "ns", name);
    notes.dedup();
    notes
}

/// The `type` of the Events with `reason`, and how many times they were recorded.
fn recorded(report: &Report, reason: &str) -> (Vec<String>, u64) {
    let events: Vec<&Value> = report
        .objects
        .iter()
        .filter(|o| o["kind"] == "Event" && o["reason"] == reason)
        .collect();
    let mut types: Vec<String> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_string())
        .collect();
    types.dedup();
    let times = events
        .iter()
        .map(|e| {
            e["series"]["count"]
                .as_u64()
                .or_else(|| e["count"].as_u64())
                .unwrap_or(1)
        })
        .sum();
    (types, times)
}

const SYNCED: &str = "Foo synced successfully";

#[tokio::test(flavor = "multi_thread")]
async fn a_foo_gets_its_deployment_a_status_and_one_synced_event() {
    let state = vec![foo_crd(), foo("example-foo", Some("example-foo"), 2)];
    let report = run_module(&SAMPLE, state, vec![], quick()).await;
    report.converged.as_ref().expect("converged");
    let created = find_deployment(&report, "example-foo").expect("the Deployment is created");
    let owner = &created["metadata"]["ownerReferences"][0];
    assert_eq!(owner["uid"], "uid-example-foo");
    assert_eq!(owner["controller"], true);
    assert_eq!(created["spec"]["replicas"], 2);
    assert_eq!(
        created["spec"]["selector"]["matchLabels"],
        json!({ "app": "nginx", "controller": "example-foo" })
    );
    assert_eq!(
        created["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:latest"
    );
    assert_eq!(
        find_foo(&report, "example-foo")["status"]["availableReplicas"],
        0
    );
    assert_eq!(
        entries_of(&report, "deployments", "example-foo"),
        [("create".into(), None, 200)],
        "created once, never updated: the new Deployment's own event writes nothing"
    );
    assert_eq!(
        entries_of(&report, "foos", "example-foo"),
        [("patch".into(), Some("status".into()), 200)]
    );
    assert_eq!(foo_events(&report, "example-foo"), [SYNCED]);
    assert_eq!(recorded(&report, "Synced"), (vec!["Normal".to_string()], 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn replicas_follow_the_foo_and_the_status_follows_the_deployment() {
    let state = vec![foo_crd(), foo("example-foo", Some("web"), 1)];
    let script = steps(concat!(
        "- patch: { apiVersion: samplecontroller.k8s.io/v1alpha1, kind: Foo, namespace: ns,\n",
        "           name: example-foo, type: merge, patch: { spec: { replicas: 3 } } }\n",
        "- patch: { apiVersion: apps/v1, kind: Deployment, namespace: ns, name: web, type: merge,\n",
        "           status: true, patch: { status: { replicas: 3, availableReplicas: 3 } } }\n",
    ));
    let report = run_module(&SAMPLE, state, script, quick()).await;
    report.converged.as_ref().expect("converged");
    assert_eq!(
        find_deployment(&report, "web").expect("web")["spec"]["replicas"],
        3
    );
    assert_eq!(
        find_foo(&report, "example-foo")["status"]["availableReplicas"],
        3
    );
    assert_eq!(
        entries_of(&report, "deployments", "web"),
        [("create".into(), None, 200), ("patch".into(), None, 200)]
    );
    assert_eq!(
        entries_of(&report, "foos", "example-foo"),
        [
            ("patch".into(), Some("status".into()), 200),
            ("patch".into(), Some("status".into()), 200)
        ],
        "availableReplicas 0, then 3"
    );
    // create + status, scale, status: one Synced per decision that wrote.
    assert_eq!(foo_events(&report, "example-foo"), [SYNCED]);
    assert_eq!(recorded(&report, "Synced").1, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deployment_of_that_name_the_foo_does_not_own_is_never_written() {
    let state = vec![
        foo_crd(),
        deployment("taken", None, 1, 1),
        foo("example-foo", Some("taken"), 5),
        foo("nameless", None, 1),
    ];
    let report = run_module(&SAMPLE, state, vec![], quick()).await;
    report.converged.as_ref().expect("converged");
    let taken = find_deployment(&report, "taken").expect("taken");
    assert_eq!(taken["spec"]["replicas"], 1, "not scaled");
    assert!(
        taken["metadata"].get("ownerReferences").is_none(),
        "not adopted"
    );
    assert!(entries_of(&report, "deployments", "taken").is_empty());
    assert!(
        entries_of(&report, "foos", "example-foo").is_empty(),
        "no status either"
    );
    let warning = r#"Resource "taken" already exists and is not managed by Foo"#;
    let events = foo_events(&report, "example-foo");
    assert!(
        !events.is_empty() && events.iter().all(|e| e == warning),
        "{events:?}"
    );
    assert_eq!(recorded(&report, "ErrResourceExists").0, ["Warning"]);
    assert!(
        entries_of(&report, "foos", "nameless").is_empty(),
        "a Foo without deploymentName: nothing"
    );
    assert!(foo_events(&report, "nameless").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_steady_state_writes_nothing() {
    let mut synced_foo = foo("example-foo", Some("example-foo"), 2);
    synced_foo["status"] = json!({ "availableReplicas": 2 });
    let state = vec![
        foo_crd(),
        synced_foo,
        deployment("example-foo", Some("example-foo"), 2, 2),
    ];
    let report = run_module(&SAMPLE, state, vec![], quick()).await;
    report.converged.as_ref().expect("converged");
    let written: Vec<_> = writes(&report.journal)
        .into_iter()
        .filter(|(_, resource, ..)| resource == "deployments" || resource == "foos")
        .collect();
    assert!(written.is_empty(), "{written:?}");
    assert!(
        foo_events(&report, "example-foo").is_empty(),
        "no Synced without a write"
    );
    assert!(
        !outcomes(&report, "sample-controller", "example-foo").is_empty(),
        "it was decided"
    );
}
