use rekon_guest::model::{
    ObjectMeta, PodPhase, PodResourceClaimStatus, ResourceClaim as Claim, ResourceClaimTemplate,
    Target,
};

use super::*;

const KEY: &str = "pod:ns/web";
const SPEC: &str =
    r#"{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"}}]}}"#;

fn meta(name: &str, uid: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: "ns".into(),
        name: name.into(),
        uid: uid.into(),
        resource_version: "7".into(),
        ..Default::default()
    }
}

/// Pod `web` with template claims `gpu` (template `gpu-tpl`) and `fpga`
/// (template `gpu-tpl`), and a direct claim `shared`.
fn input() -> PodInput {
    let pod = Pod {
        meta: meta("web", "uid-web"),
        phase: PodPhase::Pending,
        resource_claims: vec![
            template_claim("gpu"),
            template_claim("fpga"),
            PodResourceClaim {
                name: "direct".into(),
                resource_claim_name: Some("shared".into()),
                resource_claim_template_name: None,
            },
        ],
        ..Default::default()
    };
    let mut template = ResourceClaimTemplate {
        meta: meta("gpu-tpl", "uid-tpl"),
        claim_spec_json: SPEC.into(),
    };
    template.meta.labels = vec![("team".into(), "ml".into())];
    template.meta.annotations = vec![("note".into(), "from-template".into())];
    PodInput {
        pod,
        claims: Vec::new(),
        owned_claims: Vec::new(),
        templates: vec![template],
    }
}

fn template_claim(name: &str) -> PodResourceClaim {
    PodResourceClaim {
        name: name.into(),
        resource_claim_name: None,
        resource_claim_template_name: Some("gpu-tpl".into()),
    }
}

/// The claim the reference guest asks for.
fn new_claim(i: &PodInput, pod_claim: &str) -> NewClaim {
    let pc = i
        .pod
        .resource_claims
        .iter()
        .find(|p| p.name == pod_claim)
        .unwrap();
    generated_claim(&i.pod, pc, &i.templates[0])
}

fn create(i: &PodInput, pod_claim: &str) -> PodAction {
    PodAction::CreateClaim(new_claim(i, pod_claim))
}

fn statuses(i: &PodInput, entries: &[(&str, StatusClaim)]) -> PodAction {
    PodAction::SetClaimStatuses(ClaimStatuses {
        pod: i.pod.meta.target(),
        statuses: entries
            .iter()
            .map(|(name, claim)| DesiredClaimStatus {
                name: name.to_string(),
                claim: claim.clone(),
            })
            .collect(),
    })
}

fn existing(name: &str) -> StatusClaim {
    StatusClaim::Existing(name.into())
}

/// A claim controlled by the pod, generated for `pod_claim`.
fn owned_claim(i: &PodInput, name: &str, pod_claim: &str) -> Claim {
    let mut c = Claim {
        meta: meta(name, &format!("uid-{name}")),
        ..Default::default()
    };
    c.meta.owner_references = new_claim(i, pod_claim).owner_references;
    c.meta.annotations = vec![(ANNOTATION_POD_CLAIM_NAME.into(), pod_claim.into())];
    c
}

/// Statuses for all three pod claims: both template claims created.
fn create_both(i: &PodInput) -> Vec<PodAction> {
    vec![
        create(i, "gpu"),
        create(i, "fpga"),
        statuses(
            i,
            &[
                ("gpu", StatusClaim::Created),
                ("fpga", StatusClaim::Created),
            ],
        ),
    ]
}

#[track_caller]
fn reason(i: &PodInput, actions: &[PodAction], index: usize) -> String {
    crate::validate::rejected_at(plan_pod(KEY, i, actions), KEY, index)
}

// ---- create-claim ----

#[test]
fn a_create_from_the_template_plans_the_derived_claim_then_the_statuses() {
    let i = input();
    let plan = plan_pod(KEY, &i, &create_both(&i)).unwrap();
    assert_eq!(plan.len(), 3);
    let PodWrite::Create { pod_claim, claim } = &plan[0] else {
        panic!("{plan:?}")
    };
    assert_eq!(pod_claim, "gpu");
    let m = &claim.metadata;
    assert_eq!(m.generate_name.as_deref(), Some("web-gpu-"));
    assert_eq!(m.namespace.as_deref(), Some("ns"));
    assert_eq!(m.labels.as_ref().unwrap()["team"], "ml");
    let annotations = m.annotations.as_ref().unwrap();
    assert_eq!(annotations["note"], "from-template");
    assert_eq!(annotations[ANNOTATION_POD_CLAIM_NAME], "gpu");
    let owner = &m.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("Pod", "uid-web")
    );
    assert_eq!(owner.block_owner_deletion, Some(true));
    assert_eq!(
        claim
            .spec
            .devices
            .as_ref()
            .unwrap()
            .requests
            .as_ref()
            .unwrap()[0]
            .name,
        "gpu"
    );
    assert!(
        matches!(&plan[2], PodWrite::Statuses { resource_version, .. } if resource_version == "7")
    );
}

#[test]
fn a_reformatted_spec_is_the_same_spec() {
    let i = input();
    let mut new = new_claim(&i, "gpu");
    new.claim_spec_json = serde_json::to_string_pretty(&spec_value(SPEC).unwrap()).unwrap();
    let mut actions = create_both(&i);
    actions[0] = PodAction::CreateClaim(new);
    assert!(plan_pod(KEY, &i, &actions).is_ok());
}

#[test]
fn no_create_for_a_deleting_or_done_pod() {
    let mut deleting = input();
    deleting.pod.meta.deletion_timestamp = Some("t".into());
    assert!(reason(&deleting, &[create(&deleting, "gpu")], 0).contains("deleting or done"));
    let mut done = input();
    done.pod.phase = PodPhase::Succeeded;
    assert!(reason(&done, &[create(&done, "gpu")], 0).contains("deleting or done"));
}

#[test]
fn a_create_must_name_a_template_pod_claim_of_this_pod_and_its_template() {
    let i = input();
    let mut unknown = new_claim(&i, "gpu");
    unknown.pod_claim_name = "other".into();
    assert!(reason(&i, &[PodAction::CreateClaim(unknown)], 0).contains("no such pod claim"));
    let mut direct = new_claim(&i, "gpu");
    direct.pod_claim_name = "direct".into();
    assert!(reason(&i, &[PodAction::CreateClaim(direct)], 0).contains("not template-based"));
    let mut template = new_claim(&i, "gpu");
    template.template_name = "other-tpl".into();
    assert!(reason(&i, &[PodAction::CreateClaim(template)], 0).contains("names template"));
    let mut missing = input();
    missing.templates.clear();
    assert!(reason(&missing, &[create(&i, "gpu")], 0).contains("not in the input"));
}

/// Tampers with a guest's claim.
type Forge = fn(&mut NewClaim);

#[test]
fn a_create_must_carry_exactly_what_the_template_and_pod_give() {
    let i = input();
    let forged: Vec<(&str, Forge)> = vec![
        ("labels", |n| n.labels.push(("admin".into(), "yes".into()))),
        ("labels", |n| n.labels.clear()),
        ("annotations", |n| {
            n.annotations
                .retain(|(k, _)| k != ANNOTATION_POD_CLAIM_NAME)
        }),
        ("annotations", |n| {
            n.annotations.push(("note".into(), "from-template".into()))
        }),
        ("annotations", |n| {
            n.annotations
                .push((ANNOTATION_POD_CLAIM_NAME.into(), "fpga".into()));
            n.annotations.remove(1);
        }),
        ("spec", |n| {
            n.claim_spec_json = r#"{"devices":{"requests":[]}}"#.into()
        }),
        ("spec", |n| n.claim_spec_json = "not json".into()),
        ("ownerReferences", |n| n.owner_references.clear()),
        ("ownerReferences", |n| {
            n.owner_references[0].uid = "someone-else".into()
        }),
        ("ownerReferences", |n| {
            n.owner_references[0].block_owner_deletion = false
        }),
        ("ownerReferences", |n| {
            let extra = n.owner_references[0].clone();
            n.owner_references.push(extra);
        }),
        ("generateName", |n| n.generate_name = "web-gpu-x-".into()),
    ];
    for (what, forge) in forged {
        let mut new = new_claim(&i, "gpu");
        forge(&mut new);
        let r = reason(&i, &[PodAction::CreateClaim(new)], 0);
        assert!(r.contains(what), "{what}: {r}");
    }
}

#[test]
fn generate_name_must_be_truncated_as_upstream_does() {
    let mut i = input();
    i.pod.meta.name = "a".repeat(40);
    i.pod.resource_claims[0].name = "b".repeat(30);
    let mut new = new_claim(&i, &"b".repeat(30));
    assert_eq!(
        new.generate_name,
        format!("{}-{}", "a".repeat(31), "b".repeat(23))
    );
    let key = "pod:ns/aaaa";
    assert!(plan_pod(key, &i, &[PodAction::CreateClaim(new.clone())]).is_ok());
    new.generate_name = format!("{}-{}-", "a".repeat(40), "b".repeat(30));
    assert!(plan_pod(key, &i, &[PodAction::CreateClaim(new)]).is_err());
}

#[test]
fn at_most_one_create_per_pod_claim() {
    let i = input();
    let r = reason(&i, &[create(&i, "gpu"), create(&i, "gpu")], 1);
    assert!(r.contains("second create"), "{r}");
}

#[test]
fn no_create_for_a_pod_claim_that_has_a_claim() {
    // Recorded and controlled by the pod.
    let mut recorded = input();
    recorded.pod.resource_claim_statuses = vec![PodResourceClaimStatus {
        name: "gpu".into(),
        resource_claim_name: Some("web-gpu-abcde".into()),
    }];
    recorded.claims = vec![owned_claim(&recorded, "web-gpu-abcde", "gpu")];
    assert!(reason(&recorded, &[create(&recorded, "gpu")], 0).contains("already has claim"));

    // An orphan generated for it (just created, status not written yet).
    let mut orphan = input();
    orphan.owned_claims = vec![owned_claim(&orphan, "web-gpu-fghij", "gpu")];
    assert!(reason(&orphan, &[create(&orphan, "gpu")], 0).contains("generated for it already"));

    // A null status entry: intentionally no claim.
    let mut null = input();
    null.pod.resource_claim_statuses = vec![PodResourceClaimStatus {
        name: "gpu".into(),
        resource_claim_name: None,
    }];
    assert!(reason(&null, &[create(&null, "gpu")], 0).contains("no claim is needed"));
}

#[test]
fn a_recorded_claim_that_is_gone_or_foreign_is_recreated() {
    let mut i = input();
    i.pod.resource_claim_statuses = vec![PodResourceClaimStatus {
        name: "gpu".into(),
        resource_claim_name: Some("web-gpu-gone1".into()),
    }];
    let mut foreign = owned_claim(&i, "web-gpu-gone1", "gpu");
    foreign.meta.owner_references[0].uid = "uid-other-pod".into();
    i.claims = vec![foreign];
    assert!(plan_pod(KEY, &i, &create_both(&i)).is_ok());
}

// ---- set-claim-statuses ----

#[test]
fn created_entries_need_a_create_before_them() {
    let i = input();
    let created = [
        ("gpu", StatusClaim::Created),
        ("fpga", StatusClaim::Created),
    ];
    let r = reason(&i, &[create(&i, "gpu"), statuses(&i, &created)], 1);
    assert!(
        r.contains("\"fpga\"") && r.contains("did not create"),
        "{r}"
    );
    let r = reason(
        &i,
        &[
            statuses(&i, &created),
            create(&i, "gpu"),
            create(&i, "fpga"),
        ],
        0,
    );
    assert!(r.contains("did not create"), "{r}");
}

#[test]
fn statuses_target_the_keys_pod_at_the_version_seen() {
    let i = input();
    for forge in [
        (|t: &mut Target| t.name = "other".into()) as fn(&mut Target),
        |t| t.uid = "uid-other".into(),
        |t| t.resource_version = "6".into(),
    ] {
        let mut actions = create_both(&i);
        let PodAction::SetClaimStatuses(s) = &mut actions[2] else {
            unreachable!()
        };
        forge(&mut s.pod);
        assert!(reason(&i, &actions, 2).contains("not the key's pod"));
    }
}

#[test]
fn an_orphan_the_pod_controls_is_adopted_but_a_foreign_claim_is_not() {
    let mut i = input();
    i.owned_claims = vec![
        owned_claim(&i, "web-gpu-aaaaa", "gpu"),
        owned_claim(&i, "web-fpga-bbbbb", "fpga"),
    ];
    let adopt = statuses(
        &i,
        &[
            ("gpu", existing("web-gpu-aaaaa")),
            ("fpga", existing("web-fpga-bbbbb")),
        ],
    );
    assert!(plan_pod(KEY, &i, &[adopt]).is_ok());

    let mut foreign = owned_claim(&i, "someone-elses", "gpu");
    foreign.meta.owner_references[0].uid = "uid-other-pod".into();
    i.claims = vec![foreign];
    let steal = statuses(
        &i,
        &[
            ("gpu", existing("someone-elses")),
            ("fpga", existing("web-fpga-bbbbb")),
        ],
    );
    assert!(reason(&i, &[steal], 0).contains("controls"));
}

#[test]
fn the_status_list_is_complete_and_names_only_pod_claims() {
    let mut i = input();
    i.pod.resource_claim_statuses = vec![PodResourceClaimStatus {
        name: "gpu".into(),
        resource_claim_name: None,
    }];
    // Dropping the existing null entry.
    let r = reason(
        &i,
        &[
            create(&i, "fpga"),
            statuses(&i, &[("fpga", StatusClaim::Created)]),
        ],
        1,
    );
    assert!(r.contains("incomplete"), "{r}");
    // Kept, it is fine.
    let ok = [
        create(&i, "fpga"),
        statuses(
            &i,
            &[("gpu", StatusClaim::None), ("fpga", StatusClaim::Created)],
        ),
    ];
    assert!(plan_pod(KEY, &i, &ok).is_ok());
    // A template pod claim without an entry.
    let r = reason(&i, &[statuses(&i, &[("gpu", StatusClaim::None)])], 0);
    assert!(r.contains("no entry for \"fpga\""), "{r}");
    // Unknown pod claim, duplicates, a new null entry.
    let r = reason(
        &i,
        &[
            create(&i, "fpga"),
            statuses(
                &i,
                &[
                    ("gpu", StatusClaim::None),
                    ("fpga", StatusClaim::Created),
                    ("x", existing("c")),
                ],
            ),
        ],
        1,
    );
    assert!(r.contains("\"x\""), "{r}");
    let r = reason(
        &i,
        &[
            create(&i, "fpga"),
            statuses(
                &i,
                &[
                    ("gpu", StatusClaim::None),
                    ("fpga", StatusClaim::Created),
                    ("fpga", StatusClaim::Created),
                ],
            ),
        ],
        1,
    );
    assert!(r.contains("two status entries"), "{r}");
    let r = reason(
        &i,
        &[statuses(
            &i,
            &[("gpu", StatusClaim::None), ("fpga", StatusClaim::None)],
        )],
        0,
    );
    assert!(r.contains("null"), "{r}");
}

#[test]
fn a_direct_reference_may_be_recorded_under_its_own_name_only() {
    let mut i = input();
    i.owned_claims = vec![owned_claim(&i, "g", "gpu"), owned_claim(&i, "f", "fpga")];
    let base = [("gpu", existing("g")), ("fpga", existing("f"))];
    let with = |direct: &str| {
        let mut entries = base.to_vec();
        entries.push(("direct", existing(direct)));
        statuses(&i, &entries)
    };
    assert!(plan_pod(KEY, &i, &[with("shared")]).is_ok());
    assert!(reason(&i, &[with("other")], 0).contains("neither"));
}

#[test]
fn one_status_write_per_decision() {
    let i = input();
    let mut actions = create_both(&i);
    actions.push(actions[2].clone());
    assert!(reason(&i, &actions, 3).contains("second status write"));
}

// ---- reserve ----

/// Pod `web` scheduled, its direct claim `shared` allocated and reserved for
/// another pod.
fn scheduled() -> PodInput {
    let mut i = input();
    i.pod.node_name = "node-a".into();
    i.pod.phase = PodPhase::Running;
    i.pod.resource_claims.truncate(2);
    i.pod.resource_claims.push(PodResourceClaim {
        name: "direct".into(),
        resource_claim_name: Some("shared".into()),
        resource_claim_template_name: None,
    });
    i.pod.resource_claim_statuses = vec![
        PodResourceClaimStatus {
            name: "gpu".into(),
            resource_claim_name: Some("g".into()),
        },
        PodResourceClaimStatus {
            name: "fpga".into(),
            resource_claim_name: None,
        },
    ];
    let mut shared = Claim {
        meta: meta("shared", "uid-shared"),
        allocated: true,
        ..Default::default()
    };
    shared.reserved_for = vec![ConsumerReference {
        resource: "pods".into(),
        name: "other".into(),
        uid: "uid-other".into(),
        ..Default::default()
    }];
    let mut generated = owned_claim(&i, "g", "gpu");
    generated.allocated = true;
    i.claims = vec![shared, generated];
    i
}

fn reserve(i: &PodInput, claim: &str) -> PodAction {
    let c = i.claims.iter().find(|c| c.meta.name == claim).unwrap();
    PodAction::Reserve(ReservationAdd {
        claim: c.meta.target(),
        consumer: i.pod.consumer(),
    })
}

#[test]
fn a_scheduled_pod_reserves_its_allocated_claims_appending_itself() {
    let i = scheduled();
    let plan = plan_pod(KEY, &i, &[reserve(&i, "shared"), reserve(&i, "g")]).unwrap();
    let PodWrite::Reserve {
        claim,
        resource_version,
        reserved_for,
    } = &plan[0]
    else {
        panic!("{plan:?}")
    };
    assert_eq!((claim.as_str(), resource_version.as_str()), ("shared", "7"));
    assert_eq!(reserved_for.len(), 2);
    assert_eq!(reserved_for[1], i.pod.consumer());
}

#[test]
fn reserve_only_for_a_scheduled_running_pod_as_itself() {
    let mut unscheduled = scheduled();
    unscheduled.pod.node_name.clear();
    assert!(reason(&unscheduled, &[reserve(&unscheduled, "shared")], 0).contains("scheduled"));
    let mut done = scheduled();
    done.pod.phase = PodPhase::Failed;
    assert!(reason(&done, &[reserve(&done, "shared")], 0).contains("done"));
    let i = scheduled();
    let PodAction::Reserve(mut add) = reserve(&i, "shared") else {
        unreachable!()
    };
    add.consumer.uid = "uid-other-pod".into();
    assert!(reason(&i, &[PodAction::Reserve(add)], 0).contains("consumer"));
}

#[test]
fn reserve_only_allocated_unreserved_referenced_claims_at_the_version_seen() {
    let mut unallocated = scheduled();
    unallocated.claims[0].allocated = false;
    assert!(reason(&unallocated, &[reserve(&unallocated, "shared")], 0).contains("not allocated"));

    let mut already = scheduled();
    let consumer = already.pod.consumer();
    already.claims[0].reserved_for.push(consumer);
    assert!(reason(&already, &[reserve(&already, "shared")], 0).contains("already reserved"));

    let mut unreferenced = scheduled();
    unreferenced.claims[0].meta.name = "not-named-by-the-pod".into();
    let r = reason(
        &unreferenced,
        &[reserve(&unreferenced, "not-named-by-the-pod")],
        0,
    );
    assert!(r.contains("does not reference"), "{r}");

    let mut foreign = scheduled();
    foreign.claims[1].meta.owner_references[0].uid = "uid-other".into();
    assert!(reason(&foreign, &[reserve(&foreign, "g")], 0).contains("does not reference"));

    let i = scheduled();
    let PodAction::Reserve(mut stale) = reserve(&i, "shared") else {
        unreachable!()
    };
    stale.claim.resource_version = "6".into();
    assert!(reason(&i, &[PodAction::Reserve(stale)], 0).contains("version"));
    assert!(reason(&i, &[reserve(&i, "shared"), reserve(&i, "shared")], 1).contains("second"));
}

// ---- bounds ----

#[test]
fn more_than_two_per_pod_claim_plus_two_actions_are_rejected_whole() {
    let i = scheduled();
    let actions = vec![reserve(&i, "shared"); max_pod_actions(&i.pod) + 1];
    let err = plan_pod(KEY, &i, &actions).unwrap_err();
    assert_eq!(err.action, None);
    assert!(err.reason.contains("at most 8"), "{err}");
}

#[test]
fn oversized_strings_are_rejected_before_they_are_compared() {
    let i = input();
    let mut new = new_claim(&i, "gpu");
    new.claim_spec_json = " ".repeat(MAX_VALUE + 1);
    assert!(reason(&i, &[PodAction::CreateClaim(new)], 0).contains("claim spec is"));
    let mut new = new_claim(&i, "gpu");
    new.labels.push(("k".repeat(MAX_KEY + 1), "v".into()));
    assert!(reason(&i, &[PodAction::CreateClaim(new)], 0).contains("key is"));
}

// ---- issue 18: which generated claim a pod claim points to ----

/// Pod `web` with owned claims `web-gpu-aaaaa` (generated for `gpu`) and
/// `web-fpga-bbbbb` (generated for `fpga`), not yet recorded.
fn with_orphans() -> PodInput {
    let mut i = input();
    i.owned_claims = vec![
        owned_claim(&i, "web-gpu-aaaaa", "gpu"),
        owned_claim(&i, "web-fpga-bbbbb", "fpga"),
    ];
    i
}

#[test]
fn a_guest_cannot_swap_generated_claims_between_pod_claims() {
    let i = with_orphans();
    let swap = statuses(
        &i,
        &[
            ("gpu", existing("web-fpga-bbbbb")),
            ("fpga", existing("web-gpu-aaaaa")),
        ],
    );
    let r = reason(&i, &[swap], 0);
    assert!(r.contains("generated for pod claim \"fpga\""), "{r}");
}

#[test]
fn an_unannotated_claim_the_pod_controls_is_never_adopted() {
    let mut i = with_orphans();
    i.owned_claims[0].meta.annotations.clear();
    let adopt = statuses(
        &i,
        &[
            ("gpu", existing("web-gpu-aaaaa")),
            ("fpga", existing("web-fpga-bbbbb")),
        ],
    );
    let r = reason(&i, &[adopt], 0);
    assert!(r.contains("not annotated"), "{r}");
}

#[test]
fn a_recorded_claim_the_pod_controls_is_never_changed() {
    let mut i = with_orphans();
    i.pod.resource_claim_statuses = vec![PodResourceClaimStatus {
        name: "gpu".into(),
        resource_claim_name: Some("web-gpu-aaaaa".into()),
    }];
    // A second claim generated for the same pod claim (a lost status write).
    i.owned_claims.push(owned_claim(&i, "web-gpu-ccccc", "gpu"));
    let keep = statuses(
        &i,
        &[
            ("gpu", existing("web-gpu-aaaaa")),
            ("fpga", existing("web-fpga-bbbbb")),
        ],
    );
    assert!(plan_pod(KEY, &i, &[keep]).is_ok());
    let repoint = statuses(
        &i,
        &[
            ("gpu", existing("web-gpu-ccccc")),
            ("fpga", existing("web-fpga-bbbbb")),
        ],
    );
    let r = reason(&i, &[repoint], 0);
    assert!(r.contains("never changed"), "{r}");
}

#[test]
fn a_claim_of_another_namespace_is_never_reserved() {
    let mut i = scheduled();
    // Same name as the direct reference, same owner uid, another namespace:
    // what a uid-only owner index can hand over.
    i.claims[0].meta.namespace = "elsewhere".into();
    let r = reason(&i, &[reserve(&i, "shared")], 0);
    assert!(r.contains("namespace"), "{r}");
    let mut owned = scheduled();
    owned.claims[1].meta.namespace = "elsewhere".into();
    let r = reason(&owned, &[reserve(&owned, "g")], 0);
    assert!(r.contains("namespace"), "{r}");
}

#[test]
fn reserved_for_never_grows_past_its_upstream_maximum() {
    let mut i = scheduled();
    i.claims[0].reserved_for = (0..RESERVED_FOR_MAX_SIZE)
        .map(|n| ConsumerReference {
            resource: "pods".into(),
            name: format!("p{n}"),
            uid: format!("uid-p{n}"),
            ..Default::default()
        })
        .collect();
    let r = reason(&i, &[reserve(&i, "shared")], 0);
    assert!(r.contains("256"), "{r}");
    i.claims[0].reserved_for.pop();
    assert!(plan_pod(KEY, &i, &[reserve(&i, "shared")]).is_ok());
}

#[test]
fn a_pod_or_claim_seen_without_a_resource_version_is_never_written() {
    let mut i = input();
    i.pod.meta.resource_version.clear();
    let r = reason(&i, &create_both(&i), 2);
    assert!(r.contains("empty resourceVersion"), "{r}");
    let mut s = scheduled();
    s.claims[0].meta.resource_version.clear();
    let r = reason(&s, &[reserve(&s, "shared")], 0);
    assert!(r.contains("empty resourceVersion"), "{r}");
}
