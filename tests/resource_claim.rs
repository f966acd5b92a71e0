//! End-to-end: the resource-claim controller with the wasm guest against the
//! embedded API server (upstream-behaviour §3 and §6).

use std::time::Duration;

use rekon_apiserver::{FaultConfig, WatchFault};
use rekon_simulate::{ClusterOptions, Settle};
use rekon_tests::sim::*;
use serde_json::{Value, json};

fn statuses(pod: &Value) -> Vec<(String, Option<String>)> {
    pod["status"]["resourceClaimStatuses"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    (
                        s["name"].as_str().unwrap().to_string(),
                        s["resourceClaimName"].as_str().map(str::to_string),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn creates(report: &rekon_simulate::Report) -> usize {
    writes(&report.journal)
        .iter()
        .filter(|(verb, r, ..)| verb == "create" && r == "resourceclaims")
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_template_claim_is_generated_owned_annotated_and_recorded() {
    let state = vec![
        namespace("ns"),
        template("ns", "gpu"),
        pod_with_template_claims("ns", "test-pod", "", &[("acme-resource", "gpu")]),
    ];
    let report = run(state, vec![], ClusterOptions::default(), quick()).await;
    report.converged.as_ref().expect("converged");
    let all = claims(&report.objects);
    assert_eq!(all.len(), 1);
    let claim = all[0];
    let name = claim["metadata"]["name"].as_str().unwrap();
    let suffix = name
        .strip_prefix("test-pod-acme-resource-")
        .expect("generateName <pod>-<claim>-");
    assert_eq!(suffix.len(), 5);
    assert!(
        suffix
            .chars()
            .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
    );
    let owner = &claim["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "Pod");
    assert_eq!(owner["uid"], "uid-pod-test-pod");
    assert_eq!(owner["controller"], true);
    assert_eq!(owner["blockOwnerDeletion"], true);
    assert_eq!(
        claim["metadata"]["annotations"][POD_CLAIM_NAME],
        "acme-resource"
    );
    assert_eq!(claim["metadata"]["annotations"]["note"], "from-template");
    assert_eq!(claim["metadata"]["labels"]["team"], "ml");
    assert_eq!(claim["spec"]["devices"]["requests"][0]["name"], "gpu");
    let pod = find(&report.objects, "Pod", "ns", "test-pod").unwrap();
    assert_eq!(
        statuses(pod),
        vec![("acme-resource".to_string(), Some(name.to_string()))]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_with_three_template_claims_gets_all_three_in_its_status() {
    let state = vec![
        namespace("ns"),
        template("ns", "gpu"),
        pod_with_template_claims(
            "ns",
            "trio",
            "",
            &[("a", "gpu"), ("b", "gpu"), ("c", "gpu")],
        ),
    ];
    let report = run(state, vec![], ClusterOptions::default(), quick()).await;
    report.converged.as_ref().expect("converged");
    assert_eq!(claims(&report.objects).len(), 3);
    let pod = find(&report.objects, "Pod", "ns", "trio").unwrap();
    let names: Vec<String> = statuses(pod).into_iter().map(|s| s.0).collect();
    assert_eq!(names, vec!["a", "b", "c"]);
    assert!(statuses(pod).iter().all(|s| s.1.is_some()));
    assert_eq!(creates(&report), 3, "each claim created exactly once");
}

#[tokio::test(flavor = "multi_thread")]
async fn long_pod_and_claim_names_follow_the_truncation_rule() {
    let pod_name = "a".repeat(40);
    let claim_name = "b".repeat(30);
    let state = vec![
        namespace("ns"),
        template("ns", "gpu"),
        pod_with_template_claims("ns", &pod_name, "", &[(&claim_name, "gpu")]),
    ];
    let report = run(state, vec![], ClusterOptions::default(), quick()).await;
    report.converged.as_ref().expect("converged");
    let all = claims(&report.objects);
    let name = all[0]["metadata"]["name"].as_str().unwrap();
    let base = format!("{}-{}", "a".repeat(31), "b".repeat(23));
    assert!(name.starts_with(&base), "{name}");
    assert_eq!(name.len(), 60);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_done_pods_generated_claim_is_deleted_with_preconditions() {
    let state = vec![
        namespace("ns"),
        template("ns", "gpu"),
        pod_with_template_claims("ns", "job", "", &[("gpu", "gpu")]),
    ];
    let script = steps(
        "- patch: {apiVersion: v1, kind: Pod, namespace: ns, name: job, type: merge, status: true, patch: {status: {phase: Succeeded}}}",
    );
    let report = run(state, script, ClusterOptions::default(), quick()).await;
    report.converged.as_ref().expect("converged");
    assert!(
        claims(&report.objects).is_empty(),
        "the generated claim went away"
    );
    let delete = report
        .journal
        .entries()
        .into_iter()
        .find_map(|e| match e {
            rekon_controllers::journal::Entry::Write {
                verb,
                resource,
                preconditions,
                code,
                ..
            } if verb == "delete" && resource == "resourceclaims" => Some((preconditions, code)),
            _ => None,
        })
        .expect("a claim delete");
    assert!(
        delete.0.uid.is_some() && delete.0.resource_version.is_some(),
        "{delete:?}"
    );
    assert_eq!(delete.1, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_claim_named_in_the_pod_status_is_generated_again() {
    let pod = pod_with_template_claims("ns", "web", "", &[("gpu", "gpu")]);
    let mut state = vec![namespace("ns"), template("ns", "gpu"), pod.clone()];
    let mut old = claim("ns", "web-gpu-old12", false, &[]);
    controlled_by(&mut old, &pod);
    old["metadata"]["annotations"] = json!({POD_CLAIM_NAME: "gpu"});
    state.push(old);
    state[2]["status"]["resourceClaimStatuses"] =
        json!([{"name": "gpu", "resourceClaimName": "web-gpu-old12"}]);
    let script = steps(
        "- delete: {apiVersion: resource.k8s.io/v1, kind: ResourceClaim, namespace: ns, name: web-gpu-old12}",
    );
    let report = run(state, script, ClusterOptions::default(), quick()).await;
    report.converged.as_ref().expect("converged");
    let all = claims(&report.objects);
    assert_eq!(all.len(), 1);
    let new_name = all[0]["metadata"]["name"].as_str().unwrap().to_string();
    assert_ne!(new_name, "web-gpu-old12");
    let pod = find(&report.objects, "Pod", "ns", "web").unwrap();
    assert_eq!(statuses(pod), vec![("gpu".to_string(), Some(new_name))]);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_second_claim_while_the_claim_informer_lags() {
    // Claim events arrive 2 s late: the pod is reconciled again (its status write
    // bumps it) before the informer shows the claim; the mutation cache and the
    // expectations must keep it from creating a second one.
    let faults = FaultConfig {
        watches: vec![WatchFault {
            resources: vec![
                "resourceclaims.resource.k8s.io".into(),
                "resourceclaims".into(),
            ],
            delay_ms: 2000,
            ..WatchFault::default()
        }],
        ..FaultConfig::default()
    };
    let state = vec![
        namespace("ns"),
        template("ns", "gpu"),
        pod_with_template_claims("ns", "web", "", &[("gpu", "gpu"), ("fpga", "gpu")]),
    ];
    let script = steps(
        "- patch: {apiVersion: v1, kind: Pod, namespace: ns, name: web, type: merge, patch: {metadata: {labels: {poke: again}}}}",
    );
    let settle = Settle {
        quiet: Duration::from_millis(2500),
        ..quick()
    };
    let report = run(
        state,
        script,
        ClusterOptions {
            faults: Some(faults),
            ..ClusterOptions::default()
        },
        settle,
    )
    .await;
    report.converged.as_ref().expect("converged");
    assert_eq!(claims(&report.objects).len(), 2, "one claim per pod claim");
    assert_eq!(creates(&report), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pre_scheduled_pod_gets_its_allocated_claim_reserved_but_a_done_one_does_not() {
    let mut running = pod("ns", "runner", "node-a", json!([]));
    running["spec"]["resourceClaims"] = json!([{"name": "dev", "resourceClaimName": "shared"}]);
    let mut done = pod("ns", "finished", "node-a", json!([]));
    done["spec"]["resourceClaims"] = json!([{"name": "dev", "resourceClaimName": "other"}]);
    done["status"]["phase"] = json!("Succeeded");
    let state = vec![
        namespace("ns"),
        claim("ns", "shared", true, &[]),
        claim("ns", "other", true, &[]),
        running,
        done,
    ];
    let report = run(state, vec![], ClusterOptions::default(), quick()).await;
    report.converged.as_ref().expect("converged");
    let shared = find(&report.objects, "ResourceClaim", "ns", "shared").unwrap();
    assert_eq!(shared["status"]["reservedFor"][0]["uid"], "uid-pod-runner");
    let other = find(&report.objects, "ResourceClaim", "ns", "other").unwrap();
    assert!(
        other["status"]["reservedFor"]
            .as_array()
            .is_none_or(|a| a.is_empty()),
        "never reserve for a done pod"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn reservations_of_gone_pods_are_dropped_and_the_allocation_released() {
    // "ghost" is not in the cluster (live GET 404); "alive" runs.
    let alive = pod("ns", "alive", "node-a", json!([]));
    let mut deleting = claim(
        "ns",
        "shared",
        true,
        &[("ghost", "uid-ghost"), ("alive", "uid-pod-alive")],
    );
    deleting["metadata"]["finalizers"] = json!([CLAIM_FINALIZER]);
    let mut lonely = claim("ns", "lonely", true, &[("ghost", "uid-ghost")]);
    lonely["metadata"]["deletionTimestamp"] = json!(DELETED_AT);
    lonely["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    let state = vec![namespace("ns"), alive, deleting, lonely];
    let report = run(state, vec![], ClusterOptions::default(), quick()).await;
    report.converged.as_ref().expect("converged");
    let shared = find(&report.objects, "ResourceClaim", "ns", "shared").unwrap();
    let reserved: Vec<&str> = shared["status"]["reservedFor"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        reserved,
        vec!["alive"],
        "running pods keep their reservation"
    );
    assert!(shared["status"]["allocation"].is_object());
    assert!(
        find(&report.objects, "ResourceClaim", "ns", "lonely").is_none(),
        "last user gone: allocation cleared, finalizer removed, deletion completed"
    );
    let live_gets = writes(&report.journal)
        .iter()
        .filter(|(verb, _, _, n, code)| verb == "get" && n == "ghost" && *code == 404)
        .count();
    assert!(live_gets >= 1, "the missing pod was looked up live");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_without_a_pod_owner_is_never_deleted() {
    let state = vec![namespace("ns"), claim("ns", "manual", false, &[])];
    let report = run(state, vec![], ClusterOptions::default(), quick()).await;
    report.converged.as_ref().expect("converged");
    assert!(find(&report.objects, "ResourceClaim", "ns", "manual").is_some());
}

/// A misbehaving guest: decides like the reference guest it wraps, then forges
/// one more action after the honest ones.
struct Forging {
    honest: std::sync::Arc<dyn Decider<ResourceClaimWorld>>,
}

use rekon_contract::{ResourceClaimDecision, ResourceClaimInput, ResourceClaimWorld};
use rekon_controllers::decider::{DecideError, Decider, GuestInfo};
use rekon_guest::model::{ClaimAction, ClaimDecision, PodAction, Target};

impl Decider<ResourceClaimWorld> for Forging {
    fn info(&self) -> GuestInfo {
        GuestInfo {
            name: "forging".into(),
            digest: "native".into(),
        }
    }

    /// Pod key: the honest create, then statuses written to another pod.
    /// Claim key: the honest release, then a delete of a claim whose owner still runs.
    fn decide(
        &self,
        key: &str,
        input: ResourceClaimInput,
    ) -> Result<ResourceClaimDecision, DecideError> {
        let target = match &input {
            ResourceClaimInput::Claim(i) => Some(i.claim.meta.target()),
            ResourceClaimInput::Pod(_) => None,
        };
        let mut decision = self.honest.decide(key, input)?;
        match &mut decision {
            ResourceClaimDecision::Pod(decision) => {
                for action in &mut decision.actions {
                    if let PodAction::SetClaimStatuses(s) = action {
                        s.pod = Target {
                            name: "victim".into(),
                            uid: "uid-pod-victim".into(),
                            resource_version: s.pod.resource_version.clone(),
                        };
                    }
                }
            }
            ResourceClaimDecision::Claim(ClaimDecision::Actions(actions)) => {
                if !actions.is_empty() {
                    actions.push(ClaimAction::Delete(target.expect("a claim input")));
                }
            }
            ResourceClaimDecision::Claim(ClaimDecision::NeedLivePods(_)) => {}
        }
        Ok(decision)
    }
}

fn forging_deciders() -> rekon_simulate::Deciders {
    let deciders = wasm_deciders();
    let slot = deciders
        .get::<ResourceClaimWorld>()
        .expect("a resource-claim slot");
    let honest = slot.current();
    slot.swap(std::sync::Arc::new(Forging { honest }));
    deciders
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_decision_whose_second_action_is_forged_writes_nothing() {
    let state = vec![
        namespace("ns"),
        template("ns", "gpu"),
        pod_with_template_claims("ns", "web", "", &[("acme", "gpu")]),
        pod_with_template_claims("ns", "victim", "", &[]),
    ];
    let report = run_with(state, forging_deciders()).await;

    // The valid create came first, and still was not sent.
    let sent: Vec<_> = writes(&report.journal)
        .into_iter()
        .filter(|(verb, ..)| !matches!(verb.as_str(), "get" | "list"))
        .collect();
    assert!(sent.is_empty(), "{sent:?}");
    assert!(claims(&report.objects).is_empty());
    let decided = decisions(&report.journal, "pod:ns/web");
    assert!(
        decided[0]["pod"]["actions"][0]["create-claim"].is_object(),
        "the first action is a create: {decided:?}"
    );
    let notes = event_notes(&report.objects, "Pod", "ns", "web");
    assert!(
        notes.iter().any(|n| n.contains(
            "decision for pod:ns/web rejected at action 2 (set-claim-statuses of pod \"victim\")"
        )),
        "{notes:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_decision_with_a_forged_delete_after_a_valid_release_writes_nothing() {
    // "ghost" is gone (live GET 404): the honest decision drops it, clears the
    // allocation and the finalizer. The owner still runs: the delete is forged.
    let owner = pod("ns", "owner", "node-a", json!([]));
    let mut c = claim("ns", "c", true, &[("ghost", "uid-ghost")]);
    controlled_by(&mut c, &owner);
    let report = run_with(vec![namespace("ns"), owner, c], forging_deciders()).await;

    let claim_writes: Vec<_> = writes(&report.journal)
        .into_iter()
        .filter(|(verb, r, ..)| r == "resourceclaims" && verb != "get")
        .collect();
    assert!(claim_writes.is_empty(), "{claim_writes:?}");
    let c = find(&report.objects, "ResourceClaim", "ns", "c").expect("claim kept");
    assert_eq!(c["status"]["reservedFor"][0]["name"], "ghost");
    assert!(c["status"]["allocation"].is_object());
    assert_eq!(finalizers(c), vec![CLAIM_FINALIZER]);
    let notes = event_notes(&report.objects, "ResourceClaim", "ns", "c");
    assert!(
        notes.iter().any(|n| n
            .contains("decision for claim:ns/c rejected at action 3 (delete claim \"c\")")
            && n.contains("neither replaced nor done")),
        "{notes:?}"
    );
}
