//! pv-protection: the finalizer on every PersistentVolume, released only from a
//! deleting PV that is not `Bound`.
//!
//! The server's StorageObjectInUseProtection admission adds the finalizer when a
//! PV is created, so the "add" case strips it first. Phases are set through the
//! status subresource (the server has no PV binder).

use std::time::Duration;

use k8s_openapi::api::core::v1::PersistentVolume;
use kube::Api;
use kube::api::ListParams;
use serde_json::{Value, json};

use crate::peer::{Case, Harness, Peer, RUN_LABEL, State, poll_until};

pub const FINALIZER: &str = "kubernetes.io/pv-protection";

pub const PEER: Peer = Peer {
    name: "pv-protection",
    kcm_flags: &[],
    module: "rekon_guest_pv_protection",
};

/// Upstream's one write per unit of work: `stripped` re-protected, the three
/// deleted unbound PVs and the bound one once released.
pub const MIN_WRITES: u64 = 5;

pub const RESOURCE: &str = "persistentvolumes";

/// (case, phase set through status, deleted by the script)
const PVS: &[(&str, Option<&str>, bool)] = &[
    ("kept", Some("Available"), false),
    ("stripped", None, false),
    ("available", Some("Available"), true),
    ("released", Some("Released"), true),
    ("pending", None, true),
    ("bound", Some("Bound"), true),
    ("rebound", Some("Bound"), true),
];

fn pv(prefix: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": { "name": format!("{prefix}-{name}"), "labels": { RUN_LABEL: prefix } },
        "spec": { "capacity": { "storage": "1Gi" }, "accessModes": ["ReadWriteOnce"],
                  "hostPath": { "path": format!("/data/{prefix}-{name}") } }
    })
}

fn api(h: &Harness) -> Api<PersistentVolume> {
    Api::all(h.client.clone())
}

/// Every PV of the run (the canary included), by case name; listed, so that
/// the server's GET count is the controller's alone.
async fn states(h: &Harness, prefix: &str) -> anyhow::Result<Vec<(&'static str, State)>> {
    let list = api(h)
        .list(&ListParams::default().labels(&format!("{RUN_LABEL}={prefix}")))
        .await?;
    let state = |case: &str| {
        let name = format!("{prefix}-{case}");
        let found = list
            .items
            .iter()
            .find(|pv| pv.metadata.name.as_deref() == Some(name.as_str()));
        State::of(found.map(|pv| &pv.metadata))
    };
    Ok(PVS
        .iter()
        .map(|(case, ..)| *case)
        .chain(["canary"])
        .map(|case| (case, state(case)))
        .collect())
}

async fn state(h: &Harness, prefix: &str, case: &str) -> State {
    match states(h, prefix).await {
        Ok(states) => states
            .into_iter()
            .find(|(c, _)| *c == case)
            .map(|(_, s)| s)
            .expect("a case of PVS"),
        // Not Gone: a failed list must not look like a deletion.
        Err(_) => State::kept(&["(list failed)"]),
    }
}

/// A PV whose finalizer was stripped gets it back, and goes once deleted:
/// the controller is running.
pub async fn canary(h: &Harness, prefix: &str) -> anyhow::Result<bool> {
    let pvs = api(h);
    let name = format!("{prefix}-canary");
    h.create(&pvs, pv(prefix, "canary")).await?;
    h.merge(
        &pvs,
        &name,
        false,
        json!({"metadata": {"finalizers": null}}),
    )
    .await?;
    let protected = poll_until(
        Duration::from_secs(60),
        Duration::from_millis(100),
        move || async move { state(h, prefix, "canary").await == State::kept(&[FINALIZER]) },
    )
    .await;
    if !protected {
        return Ok(false);
    }
    h.delete(&pvs, &name).await?;
    Ok(poll_until(
        Duration::from_secs(20),
        Duration::from_millis(100),
        move || async move { state(h, prefix, "canary").await == State::Gone },
    )
    .await)
}

pub async fn script(h: &Harness, prefix: &str) -> anyhow::Result<(Vec<Case>, Vec<String>)> {
    let pvs = api(h);
    for (case, ..) in PVS {
        h.create(&pvs, pv(prefix, case)).await?;
    }
    for (case, phase, _) in PVS {
        if let Some(phase) = phase {
            h.merge(
                &pvs,
                &format!("{prefix}-{case}"),
                true,
                json!({"status": {"phase": phase}}),
            )
            .await?;
        }
    }
    h.merge(
        &pvs,
        &format!("{prefix}-stripped"),
        false,
        json!({"metadata": {"finalizers": null}}),
    )
    .await?;
    for (case, _, deleted) in PVS {
        if *deleted {
            h.delete(&pvs, &format!("{prefix}-{case}")).await?;
        }
    }

    let expected = |case: &str| match case {
        "kept" | "stripped" => State::kept(&[FINALIZER]),
        "bound" | "rebound" => State::deleting(&[FINALIZER]),
        _ => State::Gone,
    };
    let mut problems = Vec::new();
    let settled = poll_until(
        Duration::from_secs(20),
        Duration::from_millis(100),
        move || async move {
            states(h, prefix).await.is_ok_and(|s| {
                s.iter()
                    .all(|(case, state)| *case == "canary" || *state == expected(case))
            })
        },
    )
    .await;
    if !settled {
        problems.push("the PVs did not reach the expected states within 20 s".into());
    }
    // Long enough for a wrong removal from a bound PV to show.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut cases: Vec<Case> = states(h, prefix)
        .await?
        .into_iter()
        .filter(|(case, _)| *case != "canary")
        .map(|(case, observed)| Case {
            name: case,
            expected: expected(case),
            observed,
            note: String::new(),
        })
        .collect();

    // The bound PV is released: now its finalizer goes.
    h.merge(
        &pvs,
        &format!("{prefix}-rebound"),
        true,
        json!({"status": {"phase": "Released"}}),
    )
    .await?;
    let started = std::time::Instant::now();
    let released = poll_until(
        Duration::from_secs(20),
        Duration::from_millis(50),
        move || async move { state(h, prefix, "rebound").await == State::Gone },
    )
    .await;
    cases.push(Case {
        name: "rebound, then Released",
        expected: State::Gone,
        observed: state(h, prefix, "rebound").await,
        note: if released {
            format!(
                "{:.1} s after the phase changed",
                started.elapsed().as_secs_f64()
            )
        } else {
            String::new()
        },
    });
    Ok((cases, problems))
}

pub async fn clean_up(h: &Harness, prefix: &str) -> anyhow::Result<()> {
    h.clean_up(&api(h), prefix).await
}
