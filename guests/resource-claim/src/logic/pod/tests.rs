use super::*;
use crate::logic::fixtures::*;
use rekon_guest::model::{ConsumerReference, PodPhase, ResourceClaim, Target};

fn input(pod: Pod) -> PodInput {
    PodInput {
        pod,
        ..Default::default()
    }
}

fn creates(decision: &PodDecision) -> Vec<&NewClaim> {
    decision
        .actions
        .iter()
        .filter_map(|a| match a {
            PodAction::CreateClaim(c) => Some(c),
            _ => None,
        })
        .collect()
}

fn statuses(decision: &PodDecision) -> Option<Vec<(&str, &StatusClaim)>> {
    let mut writes = decision.actions.iter().filter_map(|a| match a {
        PodAction::SetClaimStatuses(s) => Some(s),
        _ => None,
    });
    let write = writes.next()?;
    assert!(writes.next().is_none(), "at most one status write");
    Some(
        write
            .statuses
            .iter()
            .map(|s| (s.name.as_str(), &s.claim))
            .collect(),
    )
}

fn reserved(decision: &PodDecision) -> Vec<&str> {
    decision
        .actions
        .iter()
        .filter_map(|a| match a {
            PodAction::Reserve(r) => Some(r.claim.name.as_str()),
            _ => None,
        })
        .collect()
}

fn existing(name: &str) -> StatusClaim {
    StatusClaim::Existing(name.into())
}

fn nothing() -> PodDecision {
    PodDecision::default()
}

// ---- §3.4 step 1 ----

#[test]
fn deleting_pod_gets_nothing() {
    let pod = pod_deleting(scheduled(with_template_claim(pod("p"), "gpu", "tpl")));
    let mut input = input(pod);
    input.templates.push(template("tpl"));
    assert_eq!(decide_pod(&input), nothing());
}

#[test]
fn done_pod_gets_no_claims_even_when_its_claim_was_deleted() {
    for phase in [PodPhase::Succeeded, PodPhase::Failed] {
        let mut pod = with_template_claim(pod("p"), "gpu", "tpl");
        pod.phase = phase;
        let mut input = input(pod);
        input.templates.push(template("tpl"));
        assert_eq!(decide_pod(&input), nothing(), "{phase:?}");
    }
}

#[test]
fn pod_without_claims_gets_nothing() {
    assert_eq!(decide_pod(&input(pod("p"))), nothing());
    assert_eq!(decide_pod(&input(scheduled(pod("p")))), nothing());
}

// ---- §3.1 resolution ----

#[test]
fn claim_without_name_or_template_is_unsupported() {
    let mut pod = pod("p");
    pod.resource_claims.push(PodResourceClaim {
        name: "gpu".into(),
        ..Default::default()
    });
    let decision = decide_pod(&input(pod));
    assert!(decision.actions.is_empty());
    assert_eq!(
        decision.error.as_deref(),
        Some(r#"pod "ns/p", spec.resourceClaim "gpu": unsupported API"#)
    );
}

#[test]
fn direct_claim_is_never_created() {
    let decision = decide_pod(&input(with_direct_claim(pod("p"), "gpu", "shared")));
    assert_eq!(decision, nothing());
}

#[test]
fn direct_name_wins_over_template() {
    let mut pod = with_direct_claim(pod("p"), "gpu", "shared");
    pod.resource_claims[0].resource_claim_template_name = Some("tpl".into());
    let mut input = input(pod);
    input.templates.push(template("tpl"));
    assert_eq!(decide_pod(&input), nothing());
}

#[test]
fn null_status_entry_means_no_claim() {
    let pod = with_status(with_template_claim(pod("p"), "gpu", "tpl"), "gpu", None);
    let mut input = input(pod);
    input.templates.push(template("tpl"));
    assert_eq!(decide_pod(&input), nothing());
}

// ---- §3.5 creation ----

#[test]
fn template_claim_without_status_is_created_and_recorded() {
    let mut input = input(with_template_claim(pod("p"), "gpu", "tpl"));
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    assert_eq!(decision.error, None);
    assert_eq!(creates(&decision).len(), 1);
    assert_eq!(
        statuses(&decision),
        Some(vec![("gpu", &StatusClaim::Created)])
    );
    assert!(matches!(decision.actions[0], PodAction::CreateClaim(_)));
    assert!(matches!(
        decision.actions[1],
        PodAction::SetClaimStatuses(_)
    ));
}

#[test]
fn created_claim_copies_the_template() {
    let pod = with_template_claim(pod("test-pod"), "acme-resource", "tpl");
    let mut input = input(pod.clone());
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    let expected = NewClaim {
        pod_claim_name: "acme-resource".into(),
        generate_name: "test-pod-acme-resource-".into(),
        template_name: "tpl".into(),
        labels: vec![("team".into(), "ml".into())],
        annotations: vec![
            ("note".into(), "from-template".into()),
            (POD_CLAIM_NAME_ANNOTATION.into(), "acme-resource".into()),
        ],
        owner_references: vec![owner_ref(&pod)],
        claim_spec_json: r#"{"devices":{"requests":[{"name":"gpu"}]}}"#.into(),
    };
    assert_eq!(creates(&decision), vec![&expected]);
}

#[test]
fn owner_reference_is_a_blocking_pod_controller() {
    let mut input = input(with_template_claim(pod("p"), "gpu", "tpl"));
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    let owners = &creates(&decision)[0].owner_references;
    assert_eq!(owners.len(), 1);
    let owner = &owners[0];
    assert!(owner.is_pod_controller() && owner.block_owner_deletion);
    assert_eq!((owner.name.as_str(), owner.uid.as_str()), ("p", "p-uid"));
}

#[test]
fn template_annotation_of_the_same_key_is_replaced() {
    let mut tpl = template("tpl");
    tpl.meta
        .annotations
        .push((POD_CLAIM_NAME_ANNOTATION.into(), "stale".into()));
    let mut input = input(with_template_claim(pod("p"), "gpu", "tpl"));
    input.templates.push(tpl);
    let decision = decide_pod(&input);
    let annotations = &creates(&decision)[0].annotations;
    let values: Vec<&str> = annotations
        .iter()
        .filter(|(k, _)| k == POD_CLAIM_NAME_ANNOTATION)
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(values, vec!["gpu"]);
}

#[test]
fn long_names_are_truncated_in_generate_name() {
    let pod_name = "a".repeat(40);
    let claim_name = "b".repeat(30);
    let mut input = input(with_template_claim(pod(&pod_name), &claim_name, "tpl"));
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    assert_eq!(
        creates(&decision)[0].generate_name,
        format!("{}-{}", "a".repeat(31), "b".repeat(23))
    );
}

#[test]
fn missing_template_is_an_error() {
    let decision = decide_pod(&input(with_template_claim(pod("p"), "gpu", "tpl")));
    assert!(decision.actions.is_empty());
    assert_eq!(
        decision.error.as_deref(),
        Some(r#"resource claim template "tpl": not found"#)
    );
}

#[test]
fn template_of_another_namespace_is_not_used() {
    let mut tpl = template("tpl");
    tpl.meta.namespace = "elsewhere".into();
    let mut input = input(with_template_claim(pod("p"), "gpu", "tpl"));
    input.templates.push(tpl);
    let decision = decide_pod(&input);
    assert!(decision.actions.is_empty());
    assert!(decision.error.is_some());
}

#[test]
fn missing_template_keeps_earlier_creates_without_status_write() {
    let pod = with_template_claim(with_template_claim(pod("p"), "a", "tpl"), "b", "missing");
    let mut input = input(pod);
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    assert_eq!(creates(&decision).len(), 1);
    assert_eq!(creates(&decision)[0].pod_claim_name, "a");
    assert_eq!(statuses(&decision), None);
    assert_eq!(
        decision.error.as_deref(),
        Some(r#"resource claim template "missing": not found"#)
    );
}

#[test]
fn unsupported_claim_after_a_create_keeps_the_create() {
    let mut pod = with_template_claim(pod("p"), "a", "tpl");
    pod.resource_claims.push(PodResourceClaim {
        name: "broken".into(),
        ..Default::default()
    });
    let mut input = input(pod);
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    assert_eq!(decision.actions.len(), 1);
    assert!(decision.error.unwrap().contains("unsupported API"));
}

// ---- recorded claims ----

#[test]
fn recorded_owned_claim_is_kept() {
    let pod = with_status(
        with_template_claim(pod("p"), "gpu", "tpl"),
        "gpu",
        Some("p-gpu-x"),
    );
    let mut input = input(pod.clone());
    input
        .claims
        .push(generated_for(claim("p-gpu-x"), &pod, "gpu"));
    input.templates.push(template("tpl"));
    assert_eq!(decide_pod(&input), nothing());
}

#[test]
fn recorded_but_deleted_claim_is_recreated() {
    let pod = with_status(
        with_template_claim(pod("p"), "gpu", "tpl"),
        "gpu",
        Some("p-gpu-x"),
    );
    let mut input = input(pod);
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    assert_eq!(creates(&decision).len(), 1);
    assert_eq!(
        statuses(&decision),
        Some(vec![("gpu", &StatusClaim::Created)])
    );
}

#[test]
fn recorded_claim_not_owned_is_regenerated() {
    let pod = with_status(
        with_template_claim(pod("p"), "gpu", "tpl"),
        "gpu",
        Some("p-gpu-x"),
    );
    let mut input = input(pod);
    input.claims.push(claim("p-gpu-x"));
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    assert_eq!(creates(&decision).len(), 1);
    assert_eq!(
        statuses(&decision),
        Some(vec![("gpu", &StatusClaim::Created)])
    );
}

#[test]
fn recorded_claim_of_a_previous_pod_incarnation_is_regenerated() {
    let pod = with_status(
        with_template_claim(pod("p"), "gpu", "tpl"),
        "gpu",
        Some("p-gpu-x"),
    );
    let mut previous = pod.clone();
    previous.meta.uid = "p-old-uid".into();
    let mut input = input(pod);
    input
        .claims
        .push(generated_for(claim("p-gpu-x"), &previous, "gpu"));
    input.templates.push(template("tpl"));
    assert_eq!(creates(&decide_pod(&input)).len(), 1);
}

#[test]
fn recorded_claim_in_another_namespace_does_not_count() {
    let pod = with_status(
        with_template_claim(pod("p"), "gpu", "tpl"),
        "gpu",
        Some("p-gpu-x"),
    );
    let mut claim = generated_for(claim("p-gpu-x"), &pod, "gpu");
    claim.meta.namespace = "elsewhere".into();
    let mut input = input(pod);
    input.claims.push(claim);
    input.templates.push(template("tpl"));
    assert_eq!(creates(&decide_pod(&input)).len(), 1);
}

// ---- §3.6 adoption ----

#[test]
fn annotated_orphan_is_adopted_instead_of_created() {
    let pod = with_template_claim(pod("p"), "gpu", "tpl");
    let mut input = input(pod.clone());
    input
        .owned_claims
        .push(generated_for(claim("p-gpu-abcde"), &pod, "gpu"));
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    assert!(creates(&decision).is_empty());
    assert_eq!(
        statuses(&decision),
        Some(vec![("gpu", &existing("p-gpu-abcde"))])
    );
}

#[test]
fn orphan_adoption_does_not_need_the_template() {
    let pod = with_template_claim(pod("p"), "gpu", "tpl");
    let mut input = input(pod.clone());
    input
        .owned_claims
        .push(generated_for(claim("p-gpu-abcde"), &pod, "gpu"));
    assert_eq!(decide_pod(&input).error, None);
}

#[test]
fn unannotated_owned_claim_is_not_adopted() {
    let pod = with_template_claim(pod("p"), "gpu", "tpl");
    let mut input = input(pod.clone());
    input.owned_claims.push(owned_by(claim("p-gpu"), &pod));
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    assert_eq!(creates(&decision).len(), 1);
    assert_eq!(
        statuses(&decision),
        Some(vec![("gpu", &StatusClaim::Created)])
    );
}

#[test]
fn orphan_of_another_pod_claim_is_not_adopted() {
    let pod = with_template_claim(pod("p"), "gpu", "tpl");
    let mut input = input(pod.clone());
    input
        .owned_claims
        .push(generated_for(claim("p-nic-abcde"), &pod, "nic"));
    input.templates.push(template("tpl"));
    assert_eq!(creates(&decide_pod(&input)).len(), 1);
}

#[test]
fn orphan_not_controlled_by_the_pod_is_not_adopted() {
    let pod = with_template_claim(pod("p"), "gpu", "tpl");
    let mut previous = pod.clone();
    previous.meta.uid = "p-old-uid".into();
    let mut input = input(pod);
    input
        .owned_claims
        .push(generated_for(claim("p-gpu-abcde"), &previous, "gpu"));
    input.templates.push(template("tpl"));
    assert_eq!(creates(&decide_pod(&input)).len(), 1);
}

#[test]
fn first_matching_orphan_wins() {
    let pod = with_template_claim(pod("p"), "gpu", "tpl");
    let mut input = input(pod.clone());
    input
        .owned_claims
        .push(generated_for(claim("p-gpu-first"), &pod, "gpu"));
    input
        .owned_claims
        .push(generated_for(claim("p-gpu-second"), &pod, "gpu"));
    let decision = decide_pod(&input);
    assert_eq!(
        statuses(&decision),
        Some(vec![("gpu", &existing("p-gpu-first"))])
    );
}

#[test]
fn orphan_replaces_a_recorded_claim_that_is_gone() {
    let pod = with_status(
        with_template_claim(pod("p"), "gpu", "tpl"),
        "gpu",
        Some("p-gpu-old"),
    );
    let mut input = input(pod.clone());
    input
        .owned_claims
        .push(generated_for(claim("p-gpu-new"), &pod, "gpu"));
    let decision = decide_pod(&input);
    assert_eq!(
        statuses(&decision),
        Some(vec![("gpu", &existing("p-gpu-new"))])
    );
}

#[test]
fn recorded_claim_seen_only_as_owned_needs_no_write() {
    // The informer lags, the mutation cache has the recorded claim: no change.
    let pod = with_status(
        with_template_claim(pod("p"), "gpu", "tpl"),
        "gpu",
        Some("p-gpu-x"),
    );
    let mut input = input(pod.clone());
    input
        .owned_claims
        .push(generated_for(claim("p-gpu-x"), &pod, "gpu"));
    assert_eq!(decide_pod(&input), nothing());
}

// ---- complete status list (k/k #138408) ----

#[test]
fn status_list_is_complete_with_three_template_claims() {
    let pod = with_template_claim(
        with_template_claim(with_template_claim(pod("p"), "a", "tpl"), "b", "tpl"),
        "c",
        "tpl",
    );
    let pod = with_status(pod, "a", Some("p-a-xxxxx"));
    let mut input = input(pod.clone());
    input
        .claims
        .push(generated_for(claim("p-a-xxxxx"), &pod, "a"));
    input
        .owned_claims
        .push(generated_for(claim("p-b-yyyyy"), &pod, "b"));
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    assert_eq!(creates(&decision).len(), 1);
    assert_eq!(
        statuses(&decision),
        Some(vec![
            ("a", &existing("p-a-xxxxx")),
            ("b", &existing("p-b-yyyyy")),
            ("c", &StatusClaim::Created),
        ])
    );
}

#[test]
fn untouched_entries_including_null_ones_are_kept() {
    let pod = with_template_claim(with_template_claim(pod("p"), "off", "tpl"), "gpu", "tpl");
    let pod = with_status(pod, "off", None);
    let mut input = input(pod);
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    assert_eq!(
        statuses(&decision),
        Some(vec![
            ("off", &StatusClaim::None),
            ("gpu", &StatusClaim::Created)
        ])
    );
}

#[test]
fn entries_for_unknown_pod_claims_are_never_dropped() {
    let pod = with_status(
        with_template_claim(pod("p"), "gpu", "tpl"),
        "legacy",
        Some("old"),
    );
    let mut input = input(pod);
    input.templates.push(template("tpl"));
    assert_eq!(
        statuses(&decide_pod(&input)),
        Some(vec![
            ("legacy", &existing("old")),
            ("gpu", &StatusClaim::Created)
        ])
    );
}

#[test]
fn changed_entry_keeps_its_position() {
    let pod = with_template_claim(with_template_claim(pod("p"), "a", "tpl"), "b", "tpl");
    let pod = with_status(with_status(pod, "b", Some("p-b-gone")), "a", Some("p-a-x"));
    let mut input = input(pod.clone());
    input.claims.push(generated_for(claim("p-a-x"), &pod, "a"));
    input.templates.push(template("tpl"));
    assert_eq!(
        statuses(&decide_pod(&input)),
        Some(vec![
            ("b", &StatusClaim::Created),
            ("a", &existing("p-a-x"))
        ])
    );
}

#[test]
fn status_write_targets_the_pod_as_seen() {
    let mut input = input(with_template_claim(pod("p"), "gpu", "tpl"));
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    let target = decision.actions.iter().find_map(|a| match a {
        PodAction::SetClaimStatuses(s) => Some(&s.pod),
        _ => None,
    });
    assert_eq!(
        target,
        Some(&Target {
            name: "p".into(),
            uid: "p-uid".into(),
            resource_version: "10".into(),
        })
    );
}

#[test]
fn direct_claims_get_no_status_entry() {
    let pod = with_template_claim(with_direct_claim(pod("p"), "shared", "s"), "gpu", "tpl");
    let mut input = input(pod);
    input.templates.push(template("tpl"));
    assert_eq!(
        statuses(&decide_pod(&input)),
        Some(vec![("gpu", &StatusClaim::Created)])
    );
}

// ---- §3.4 step 5 reservations ----

fn scheduled_with_direct(claims: &[&str]) -> Pod {
    claims.iter().fold(scheduled(pod("p")), |pod, name| {
        with_direct_claim(pod, &format!("pc-{name}"), name)
    })
}

fn with_claims(pod: Pod, claims: Vec<ResourceClaim>) -> PodInput {
    PodInput {
        pod,
        claims,
        ..Default::default()
    }
}

#[test]
fn scheduled_pod_reserves_allocated_claim() {
    let pod = scheduled_with_direct(&["shared"]);
    let input = with_claims(pod.clone(), vec![allocated(claim("shared"))]);
    assert_eq!(
        decide_pod(&input),
        PodDecision {
            actions: vec![PodAction::Reserve(ReservationAdd {
                claim: Target {
                    name: "shared".into(),
                    uid: "shared-uid".into(),
                    resource_version: "20".into(),
                },
                consumer: ConsumerReference {
                    api_group: String::new(),
                    resource: "pods".into(),
                    name: "p".into(),
                    uid: "p-uid".into(),
                },
            })],
            error: None,
        }
    );
}

#[test]
fn claim_already_reserved_for_the_pod_is_left_alone() {
    let pod = scheduled_with_direct(&["shared"]);
    let claim = reserved_for(allocated(claim("shared")), pod.consumer());
    assert_eq!(decide_pod(&with_claims(pod, vec![claim])), nothing());
}

#[test]
fn claim_reserved_for_another_pod_is_also_reserved_for_this_one() {
    let other = scheduled(pod("q"));
    let pod = scheduled_with_direct(&["shared"]);
    let claim = reserved_for(allocated(claim("shared")), other.consumer());
    assert_eq!(
        reserved(&decide_pod(&with_claims(pod, vec![claim]))),
        vec!["shared"]
    );
}

#[test]
fn unallocated_claim_is_not_reserved() {
    let pod = scheduled_with_direct(&["shared"]);
    assert_eq!(
        decide_pod(&with_claims(pod, vec![claim("shared")])),
        nothing()
    );
}

#[test]
fn unscheduled_pod_reserves_nothing() {
    let pod = with_direct_claim(pod("p"), "pc", "shared");
    assert_eq!(
        decide_pod(&with_claims(pod, vec![allocated(claim("shared"))])),
        nothing()
    );
}

#[test]
fn done_pods_reserve_nothing() {
    for phase in [PodPhase::Succeeded, PodPhase::Failed] {
        let pod = in_phase(scheduled_with_direct(&["shared"]), phase);
        let decision = decide_pod(&with_claims(pod, vec![allocated(claim("shared"))]));
        assert_eq!(decision, nothing(), "{phase:?}");
    }
}

#[test]
fn deleting_scheduled_pod_reserves_nothing() {
    let pod = pod_deleting(scheduled_with_direct(&["shared"]));
    assert_eq!(
        decide_pod(&with_claims(pod, vec![allocated(claim("shared"))])),
        nothing()
    );
}

#[test]
fn no_reservations_in_a_pass_that_creates() {
    let pod = with_template_claim(scheduled_with_direct(&["shared"]), "gpu", "tpl");
    let mut input = with_claims(pod, vec![allocated(claim("shared"))]);
    input.templates.push(template("tpl"));
    let decision = decide_pod(&input);
    assert_eq!(creates(&decision).len(), 1);
    assert!(reserved(&decision).is_empty());
    assert_eq!(decision.error, None);
}

#[test]
fn missing_claim_stops_reservations_successfully() {
    let pod = scheduled_with_direct(&["a", "missing", "c"]);
    let input = with_claims(pod, vec![allocated(claim("a")), allocated(claim("c"))]);
    let decision = decide_pod(&input);
    assert_eq!(reserved(&decision), vec!["a"]);
    assert_eq!(decision.error, None);
}

#[test]
fn null_entry_is_skipped_when_reserving() {
    let pod = with_direct_claim(
        with_template_claim(scheduled(pod("p")), "off", "tpl"),
        "pc",
        "c",
    );
    let pod = with_status(pod, "off", None);
    let decision = decide_pod(&with_claims(pod, vec![allocated(claim("c"))]));
    assert_eq!(reserved(&decision), vec!["c"]);
}

#[test]
fn recorded_generated_claim_is_reserved() {
    let pod = with_status(
        with_template_claim(scheduled(pod("p")), "gpu", "tpl"),
        "gpu",
        Some("p-gpu-x"),
    );
    let claim = allocated(generated_for(claim("p-gpu-x"), &pod, "gpu"));
    let decision = decide_pod(&with_claims(pod, vec![claim]));
    assert_eq!(reserved(&decision), vec!["p-gpu-x"]);
    assert_eq!(statuses(&decision), None);
}

#[test]
fn adopted_orphan_is_recorded_then_reserved() {
    let pod = with_template_claim(scheduled(pod("p")), "gpu", "tpl");
    let mut input = input(pod.clone());
    input
        .owned_claims
        .push(allocated(generated_for(claim("p-gpu-abcde"), &pod, "gpu")));
    let decision = decide_pod(&input);
    assert!(matches!(
        decision.actions[0],
        PodAction::SetClaimStatuses(_)
    ));
    assert_eq!(reserved(&decision), vec!["p-gpu-abcde"]);
}

#[test]
fn direct_claim_needs_no_ownership_to_be_reserved() {
    let other = scheduled(pod("owner"));
    let pod = scheduled_with_direct(&["shared"]);
    let claim = allocated(owned_by(claim("shared"), &other));
    assert_eq!(
        reserved(&decide_pod(&with_claims(pod, vec![claim]))),
        vec!["shared"]
    );
}

#[test]
fn claim_named_twice_is_reserved_once() {
    let pod = scheduled_with_direct(&["shared", "shared"]);
    let decision = decide_pod(&with_claims(pod, vec![allocated(claim("shared"))]));
    assert_eq!(reserved(&decision), vec!["shared"]);
}

#[test]
fn several_allocated_claims_are_reserved_in_order() {
    let pod = scheduled_with_direct(&["a", "b"]);
    let input = with_claims(pod, vec![allocated(claim("b")), allocated(claim("a"))]);
    assert_eq!(reserved(&decide_pod(&input)), vec!["a", "b"]);
}

#[test]
fn pending_scheduled_pod_reserves() {
    let pod = in_phase(scheduled_with_direct(&["shared"]), PodPhase::Pending);
    let decision = decide_pod(&with_claims(pod, vec![allocated(claim("shared"))]));
    assert_eq!(reserved(&decision), vec!["shared"]);
}

#[test]
fn template_claim_not_owned_is_an_error_when_reserving() {
    // Unreachable through decide_pod (HandleClaim regenerates first), checked
    // directly because the rule guards against a host sending odd input.
    let pod = with_status(
        with_template_claim(scheduled(pod("p")), "gpu", "tpl"),
        "gpu",
        Some("x"),
    );
    let input = with_claims(pod, vec![allocated(claim("x"))]);
    let mut actions = Vec::new();
    assert_eq!(
        reserve(&input, &[], &mut actions).unwrap_err().to_string(),
        "ResourceClaim ns/x was not created for pod ns/p (pod is not owner)"
    );
    assert!(actions.is_empty());
}

#[test]
fn unrecorded_template_claim_is_not_created_yet_when_reserving() {
    let pod = with_template_claim(scheduled(pod("p")), "gpu", "tpl");
    let mut actions = Vec::new();
    assert_eq!(
        reserve(&input(pod), &[], &mut actions)
            .unwrap_err()
            .to_string(),
        r#"pod "ns/p", spec.resourceClaim "gpu": ResourceClaim not created yet"#
    );
}
