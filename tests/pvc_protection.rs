//! End-to-end: the pvc-protection controller against the embedded API server
//! (upstream-behaviour §1 and §4.3). Every scenario runs twice: with the
//! dedicated pvc-protection world's wasm guest (`dedicated::…`), and with the
//! same decision as a module of the generic controller world,
//! guests/pvc-protection-generic (`generic::…`). The last two tests swap in a
//! misbehaving guest of the dedicated world: they check its host-side rules,
//! which the generic world does not have (it checks a module's scope only).

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use rekon_apiserver::{FaultConfig, KubeletMode, RequestFault, Verb, WatchFault};
use rekon_controllers::generic::ControllerModule;
use rekon_controllers::journal::Journal;
use rekon_simulate::{ClusterOptions, Deciders, Report, Settle, Step, simulate};
use rekon_tests::sim::*;
use serde_json::{Value, json};

/// What decides the PVCs.
#[derive(Debug, Clone, Copy)]
enum Runner {
    /// The built-in pvc-protection controller with the wasm guest of its world.
    Dedicated,
    /// The generic controller running guests/pvc-protection-generic, alone.
    Generic,
}

static GENERIC: LazyLock<ControllerModule> =
    LazyLock::new(|| controller_module("rekon_guest_pvc_protection_generic"));

impl Runner {
    async fn run(
        self,
        state: Vec<Value>,
        steps: Vec<Step>,
        options: ClusterOptions,
        settle: Settle,
    ) -> Report {
        match self {
            Runner::Dedicated => run(state, steps, options, settle).await,
            Runner::Generic => {
                let options = ClusterOptions {
                    controllers: GENERIC.name().parse().unwrap(),
                    modules: vec![GENERIC.clone()],
                    ..options
                };
                let journal = Arc::new(Journal::new());
                simulate(state, steps, options, settle, Deciders::new(), journal)
                    .await
                    .expect("simulation runs")
            }
        }
    }

    /// Whether a decision for `key` asked for the live pod list.
    fn asked_live(self, report: &Report, key: &str) -> bool {
        decisions(&report.journal, key)
            .iter()
            .any(|outcome| match self {
                Runner::Dedicated => outcome == "need-live-pods",
                // The generic world's journal keeps `{"decide": {"read": [...]}}`.
                Runner::Generic => outcome
                    .pointer("/decide/read")
                    .and_then(Value::as_array)
                    .is_some_and(|reads| reads.iter().any(|r| r["list"]["kind"]["kind"] == "Pod")),
            })
    }
}

/// Each scenario, once per runner: `dedicated::NAME` and `generic::NAME`.
macro_rules! with_each_runner {
    ($($scenario:ident),* $(,)?) => {
        mod dedicated {
            $(#[tokio::test(flavor = "multi_thread")]
            async fn $scenario() {
                super::$scenario(super::Runner::Dedicated).await
            })*
        }
        mod generic {
            $(#[tokio::test(flavor = "multi_thread")]
            async fn $scenario() {
                super::$scenario(super::Runner::Generic).await
            })*
        }
    };
}

with_each_runner!(
    a_pvc_used_by_a_scheduled_pod_keeps_its_finalizer,
    the_finalizer_goes_once_the_pod_is_gone_after_a_live_list,
    a_succeeded_pod_that_still_exists_keeps_blocking,
    an_unscheduled_pod_never_blocks,
    ephemeral_pvcs_count_only_when_owned_by_the_pod,
    a_pvc_without_the_finalizer_gets_it,
    a_stale_pod_cache_never_removes_the_finalizer,
    a_conflict_leads_to_a_fresh_decision_not_a_blind_retry,
    a_pod_replaced_under_the_same_name_releases_the_old_pods_pvc,
);

fn options() -> ClusterOptions {
    ClusterOptions::default()
}

fn pvc_patches(report: &rekon_simulate::Report, name: &str) -> Vec<u16> {
    writes(&report.journal)
        .into_iter()
        .filter(|(verb, resource, _, n, _)| {
            verb == "patch" && resource == "persistentvolumeclaims" && n == name
        })
        .map(|w| w.4)
        .collect()
}

/// Exactly one patch landed; any other was refused by its precondition (a
/// decision on a copy the watch had not refreshed yet), never applied blindly.
fn assert_one_successful_patch(codes: &[u16]) {
    assert_eq!(codes.iter().filter(|c| **c == 200).count(), 1, "{codes:?}");
    assert!(
        codes.iter().all(|c| [200, 404, 409].contains(c)),
        "{codes:?}"
    );
}

async fn a_pvc_used_by_a_scheduled_pod_keeps_its_finalizer(runner: Runner) {
    let state = vec![
        namespace("ns"),
        deleting_pvc("ns", "data"),
        pod("ns", "web", "node-a", json!([pvc_volume("v", "data")])),
    ];
    let report = runner.run(state, vec![], options(), quick()).await;
    report.converged.as_ref().expect("converged");
    let pvc =
        find(&report.objects, "PersistentVolumeClaim", "ns", "data").expect("PVC still there");
    assert_eq!(finalizers(pvc), vec![PVC_FINALIZER]);
    assert!(
        pvc_patches(&report, "data").is_empty(),
        "no write while in use"
    );
}

async fn the_finalizer_goes_once_the_pod_is_gone_after_a_live_list(runner: Runner) {
    let state = vec![
        namespace("ns"),
        deleting_pvc("ns", "data"),
        pod("ns", "web", "node-a", json!([pvc_volume("v", "data")])),
    ];
    let script = steps("- delete: {apiVersion: v1, kind: Pod, namespace: ns, name: web}");
    let report = runner.run(state, script, options(), quick()).await;
    report.converged.as_ref().expect("converged");
    assert!(
        find(&report.objects, "PersistentVolumeClaim", "ns", "data").is_none(),
        "removing the last finalizer deleted the PVC"
    );
    let w = writes(&report.journal);
    let list = w
        .iter()
        .position(|(verb, r, ..)| verb == "list" && r == "pods")
        .expect("a live pod list");
    let patch = w
        .iter()
        .position(|(verb, r, _, n, code)| {
            verb == "patch" && r == "persistentvolumeclaims" && n == "data" && *code == 200
        })
        .expect("the finalizer patch");
    assert!(list < patch, "the live list precedes the removal: {w:?}");
}

async fn a_succeeded_pod_that_still_exists_keeps_blocking(runner: Runner) {
    let mut done = pod("ns", "job", "node-a", json!([pvc_volume("v", "data")]));
    done["status"]["phase"] = json!("Succeeded");
    let state = vec![namespace("ns"), deleting_pvc("ns", "data"), done];
    let report = runner.run(state, vec![], options(), quick()).await;
    report.converged.as_ref().expect("converged");
    let pvc = find(&report.objects, "PersistentVolumeClaim", "ns", "data").expect("PVC kept");
    assert_eq!(finalizers(pvc), vec![PVC_FINALIZER]);
}

async fn an_unscheduled_pod_never_blocks(runner: Runner) {
    let state = vec![
        namespace("ns"),
        deleting_pvc("ns", "data"),
        pod("ns", "pending", "", json!([pvc_volume("v", "data")])),
    ];
    let report = runner.run(state, vec![], options(), quick()).await;
    report.converged.as_ref().expect("converged");
    assert!(find(&report.objects, "PersistentVolumeClaim", "ns", "data").is_none());
    assert_one_successful_patch(&pvc_patches(&report, "data"));
}

async fn ephemeral_pvcs_count_only_when_owned_by_the_pod(runner: Runner) {
    let owner = pod("ns", "web", "node-a", json!([ephemeral_volume("scratch")]));
    let mut owned = deleting_pvc("ns", "web-scratch");
    controlled_by(&mut owned, &owner);
    // Same name, but owned by nobody: the pod does not use it.
    let stranger_pod = pod("ns", "api", "node-a", json!([ephemeral_volume("cache")]));
    let unowned = deleting_pvc("ns", "api-cache");
    let state = vec![namespace("ns"), owner, owned, stranger_pod, unowned];
    let report = runner.run(state, vec![], options(), quick()).await;
    report.converged.as_ref().expect("converged");
    let kept = find(
        &report.objects,
        "PersistentVolumeClaim",
        "ns",
        "web-scratch",
    )
    .expect("owned ephemeral PVC kept");
    assert_eq!(finalizers(kept), vec![PVC_FINALIZER]);
    assert!(
        find(&report.objects, "PersistentVolumeClaim", "ns", "api-cache").is_none(),
        "not owned: released"
    );
}

async fn a_pvc_without_the_finalizer_gets_it(runner: Runner) {
    let mut bare = pvc("ns", "old");
    bare["metadata"]["finalizers"] = json!([]);
    let state = vec![namespace("ns"), bare];
    let report = runner.run(state, vec![], options(), quick()).await;
    report.converged.as_ref().expect("converged");
    let pvc = find(&report.objects, "PersistentVolumeClaim", "ns", "old").unwrap();
    assert_eq!(finalizers(pvc), vec![PVC_FINALIZER]);
    assert_one_successful_patch(&pvc_patches(&report, "old"));
}

async fn a_stale_pod_cache_never_removes_the_finalizer(runner: Runner) {
    // Pod events reach the host 3 s late: when the PVC is deleted right after a
    // pod that uses it was created, the cache has no user, but the live list does.
    let faults = FaultConfig {
        watches: vec![WatchFault {
            resources: vec!["pods".into()],
            delay_ms: 3000,
            ..WatchFault::default()
        }],
        ..FaultConfig::default()
    };
    let state = vec![namespace("ns"), pvc("ns", "data")];
    let script = steps(
        r#"
- create: {apiVersion: v1, kind: Pod, metadata: {namespace: ns, name: web}, spec: {nodeName: node-a, containers: [{name: c, image: i}], volumes: [{name: v, persistentVolumeClaim: {claimName: data}}]}}
- delete: {apiVersion: v1, kind: PersistentVolumeClaim, namespace: ns, name: data}
"#,
    );
    let settle = Settle {
        quiet: Duration::from_millis(200),
        ..quick()
    };
    let report = runner
        .run(
            state,
            script,
            ClusterOptions {
                faults: Some(faults),
                ..options()
            },
            settle,
        )
        .await;
    let pvc = find(&report.objects, "PersistentVolumeClaim", "ns", "data").expect("PVC kept");
    assert_eq!(finalizers(pvc), vec![PVC_FINALIZER]);
    assert!(
        pvc_patches(&report, "data").is_empty(),
        "never removed: {:?}",
        writes(&report.journal)
    );
    assert!(
        runner.asked_live(&report, "ns/data"),
        "the guest found no user in the cache and asked for the live list: {:?}",
        decisions(&report.journal, "ns/data")
    );
}

async fn a_conflict_leads_to_a_fresh_decision_not_a_blind_retry(runner: Runner) {
    // Half of the PVC patches are answered 409.
    let faults = FaultConfig {
        seed: Some(3),
        requests: vec![
            RequestFault::new()
                .verbs([Verb::Patch])
                .resources(["persistentvolumeclaims"])
                .conflict(0.5),
        ],
        ..FaultConfig::default()
    };
    let state = vec![
        namespace("ns"),
        deleting_pvc("ns", "a"),
        deleting_pvc("ns", "b"),
        deleting_pvc("ns", "c"),
        deleting_pvc("ns", "d"),
    ];
    let report = runner
        .run(
            state,
            vec![],
            ClusterOptions {
                faults: Some(faults),
                ..options()
            },
            quick(),
        )
        .await;
    report.converged.as_ref().expect("converged");
    let entries = report.journal.entries();
    let mut saw_conflict = false;
    for name in ["a", "b", "c", "d"] {
        assert!(
            find(&report.objects, "PersistentVolumeClaim", "ns", name).is_none(),
            "{name} released"
        );
        // Between two patches of the same PVC there is always a new decision.
        let mut decided_since_write = false;
        for e in &entries {
            match e {
                rekon_controllers::journal::Entry::Decision { key, .. }
                    if key == &format!("ns/{name}") =>
                {
                    decided_since_write = true
                }
                rekon_controllers::journal::Entry::Write {
                    verb,
                    name: n,
                    code,
                    ..
                } if verb == "patch" && n == name => {
                    assert!(
                        decided_since_write,
                        "patch of {name} without a fresh decision"
                    );
                    decided_since_write = false;
                    saw_conflict |= *code == 409;
                }
                _ => {}
            }
        }
    }
    assert!(
        saw_conflict,
        "the fault injection produced at least one 409"
    );
}

async fn a_pod_replaced_under_the_same_name_releases_the_old_pods_pvc(runner: Runner) {
    let state = vec![
        namespace("ns"),
        deleting_pvc("ns", "old-data"),
        pod("ns", "web", "node-a", json!([pvc_volume("v", "old-data")])),
    ];
    // Delete + re-create under the same name with another PVC; the kubelet removes the old pod.
    let script = steps(
        r#"
- delete: {apiVersion: v1, kind: Pod, namespace: ns, name: web, gracePeriodSeconds: 0}
- create: {apiVersion: v1, kind: Pod, metadata: {namespace: ns, name: web}, spec: {nodeName: node-a, containers: [{name: c, image: i}], volumes: [{name: v, persistentVolumeClaim: {claimName: new-data}}]}}
"#,
    );
    let report = runner
        .run(
            state,
            script,
            ClusterOptions {
                kubelet: KubeletMode::Instant,
                ..options()
            },
            quick(),
        )
        .await;
    report.converged.as_ref().expect("converged");
    assert!(
        find(&report.objects, "PersistentVolumeClaim", "ns", "old-data").is_none(),
        "{:#?}\n{:#?}",
        report.objects,
        report.journal.entries()
    );
}

/// A misbehaving guest: asks for the live pod list, then removes the finalizer
/// whatever the list says.
struct RemovesAnyway;

impl rekon_controllers::decider::Decider<rekon_contract::PvcProtectionWorld> for RemovesAnyway {
    fn info(&self) -> rekon_controllers::decider::GuestInfo {
        rekon_controllers::decider::GuestInfo {
            name: "removes-anyway".into(),
            digest: "native".into(),
        }
    }

    fn decide(
        &self,
        _key: &str,
        input: rekon_guest::model::PvcInput,
    ) -> Result<rekon_guest::model::PvcDecision, rekon_controllers::decider::DecideError> {
        use rekon_guest::model::{PvcAction, PvcDecision};
        Ok(match input.live_pods {
            None => PvcDecision::NeedLivePods,
            Some(_) => {
                PvcDecision::Actions(vec![PvcAction::RemoveFinalizer(input.pvc.meta.target())])
            }
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_guest_removing_the_finalizer_of_a_pvc_in_use_is_refused_and_nothing_is_written() {
    let state = vec![
        namespace("ns"),
        deleting_pvc("ns", "data"),
        pod("ns", "web", "node-a", json!([pvc_volume("v", "data")])),
    ];
    let deciders = wasm_deciders();
    deciders
        .get::<rekon_contract::PvcProtectionWorld>()
        .expect("a pvc-protection slot")
        .swap(std::sync::Arc::new(RemovesAnyway));
    let report = run_with(state, deciders).await;

    let pvc = find(&report.objects, "PersistentVolumeClaim", "ns", "data").expect("PVC kept");
    assert_eq!(finalizers(pvc), vec![PVC_FINALIZER]);
    assert!(
        pvc_patches(&report, "data").is_empty(),
        "{:?}",
        writes(&report.journal)
    );
    let notes = event_notes(&report.objects, "PersistentVolumeClaim", "ns", "data");
    assert!(
        notes.iter().any(|n| n
            .contains("decision for ns/data rejected at action 1 (remove-finalizer")
            && n.contains("pod ns/web (uid uid-pod-web) still uses the PVC")),
        "{notes:?}"
    );
}

/// A guest that asks for the live pod list whatever the PVC, then does nothing.
struct AlwaysLists;

impl rekon_controllers::decider::Decider<rekon_contract::PvcProtectionWorld> for AlwaysLists {
    fn info(&self) -> rekon_controllers::decider::GuestInfo {
        rekon_controllers::decider::GuestInfo {
            name: "always-lists".into(),
            digest: "native".into(),
        }
    }

    fn decide(
        &self,
        _key: &str,
        input: rekon_guest::model::PvcInput,
    ) -> Result<rekon_guest::model::PvcDecision, rekon_controllers::decider::DecideError> {
        use rekon_guest::model::PvcDecision;
        Ok(match input.live_pods {
            None => PvcDecision::NeedLivePods,
            Some(_) => PvcDecision::Actions(vec![]),
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_live_list_for_a_pvc_that_is_not_being_deleted_is_a_protocol_error() {
    let mut live = pvc("ns", "data");
    live["metadata"]["finalizers"] = json!([]);
    let state = vec![
        namespace("ns"),
        live,
        pod("ns", "web", "node-a", json!([pvc_volume("v", "data")])),
    ];
    let deciders = wasm_deciders();
    deciders
        .get::<rekon_contract::PvcProtectionWorld>()
        .expect("a pvc-protection slot")
        .swap(std::sync::Arc::new(AlwaysLists));
    let report = run_with(state, deciders).await;

    let lists: Vec<_> = writes(&report.journal)
        .into_iter()
        .filter(|(verb, ..)| verb == "list")
        .collect();
    assert!(
        lists.is_empty(),
        "no live LIST upstream would not make: {lists:?}"
    );
    let notes = event_notes(&report.objects, "PersistentVolumeClaim", "ns", "data");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("always-lists broke the protocol")
                && n.contains("not being deleted")),
        "{notes:?}"
    );
}
