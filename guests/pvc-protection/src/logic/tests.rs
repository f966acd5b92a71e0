use super::{FINALIZER, decide, is_ephemeral_claim_name};
use rekon_guest::model::{
    self, ObjectMeta, OwnerReference, Pod, PodPhase, PodVolume, Pvc, PvcAction, PvcDecision,
    Target, VolumeSource,
};
use rekon_guest::projection::pvc as projected;

// The logic decides on the 0.2.0 projection; these tests build the host's model
// and project it the way the host does at the boundary.

fn needs_finalizer(pvc: &Pvc) -> bool {
    super::needs_finalizer(&pvc.clone().into())
}

fn is_deletion_candidate(pvc: &Pvc) -> bool {
    super::is_deletion_candidate(&pvc.clone().into())
}

/// Through the whole input's projection, which drops pods of other namespaces.
fn pod_uses_pvc(pod: &Pod, pvc: &Pvc) -> bool {
    let input = input(pvc.clone(), vec![pod.clone()], None);
    input
        .cached_pods
        .iter()
        .any(|pod| super::pod_uses_pvc(pod, &input.pvc))
}

const NS: &str = "ns";

fn pvc(name: &str) -> Pvc {
    Pvc {
        meta: ObjectMeta {
            namespace: NS.into(),
            name: name.into(),
            uid: format!("{name}-uid"),
            resource_version: "7".into(),
            finalizers: vec![FINALIZER.into()],
            ..Default::default()
        },
    }
}

fn without_finalizer(mut pvc: Pvc) -> Pvc {
    pvc.meta.finalizers.clear();
    pvc
}

fn deleting(mut pvc: Pvc) -> Pvc {
    pvc.meta.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
    pvc
}

fn owned_by(mut pvc: Pvc, pod: &Pod) -> Pvc {
    pvc.meta.owner_references.push(OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: pod.meta.name.clone(),
        uid: pod.meta.uid.clone(),
        controller: true,
        block_owner_deletion: true,
    });
    pvc
}

/// A scheduled, running pod without volumes.
fn pod(name: &str) -> Pod {
    Pod {
        meta: ObjectMeta {
            namespace: NS.into(),
            name: name.into(),
            uid: format!("{name}-uid"),
            resource_version: "3".into(),
            ..Default::default()
        },
        node_name: "node-1".into(),
        phase: PodPhase::Running,
        ..Default::default()
    }
}

fn with_claim(mut pod: Pod, claim_name: &str) -> Pod {
    pod.volumes.push(PodVolume {
        name: format!("vol-{}", pod.volumes.len()),
        source: VolumeSource::PersistentVolumeClaim(claim_name.into()),
    });
    pod
}

fn with_ephemeral(mut pod: Pod, volume: &str) -> Pod {
    pod.volumes.push(PodVolume {
        name: volume.into(),
        source: VolumeSource::Ephemeral,
    });
    pod
}

fn in_phase(mut pod: Pod, phase: PodPhase) -> Pod {
    pod.phase = phase;
    pod
}

fn unscheduled(mut pod: Pod) -> Pod {
    pod.node_name.clear();
    pod
}

fn pod_deleting(mut pod: Pod, grace: Option<i64>) -> Pod {
    pod.meta.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
    pod.meta.deletion_grace_period_seconds = grace;
    pod
}

fn input(pvc: Pvc, cached: Vec<Pod>, live: Option<Vec<Pod>>) -> projected::PvcInput {
    model::PvcInput {
        pvc,
        cached_pods: cached,
        live_pods: live,
    }
    .into()
}

fn keep() -> PvcDecision {
    PvcDecision::Actions(vec![])
}

fn remove(pvc: &Pvc) -> PvcDecision {
    PvcDecision::Actions(vec![PvcAction::RemoveFinalizer(pvc.meta.target())])
}

// ---- predicates (§1.1) ----

#[test]
fn needs_finalizer_when_live_and_absent() {
    assert!(needs_finalizer(&without_finalizer(pvc("data"))));
}

#[test]
fn needs_no_finalizer_when_present() {
    assert!(!needs_finalizer(&pvc("data")));
}

#[test]
fn needs_no_finalizer_when_deleting_without_it() {
    assert!(!needs_finalizer(&deleting(without_finalizer(pvc("data")))));
}

#[test]
fn deletion_candidate_when_deleting_with_finalizer() {
    assert!(is_deletion_candidate(&deleting(pvc("data"))));
}

#[test]
fn not_deletion_candidate_when_not_deleting() {
    assert!(!is_deletion_candidate(&pvc("data")));
}

#[test]
fn not_deletion_candidate_when_finalizer_already_gone() {
    assert!(!is_deletion_candidate(&deleting(without_finalizer(pvc(
        "data"
    )))));
}

#[test]
fn ephemeral_claim_name_is_pod_dash_volume() {
    assert!(is_ephemeral_claim_name("web-0", "scratch", "web-0-scratch"));
    assert!(!is_ephemeral_claim_name("web-0", "scratch", "web-0scratch"));
    assert!(!is_ephemeral_claim_name(
        "web-0",
        "scratch",
        "web-0-scratch-1"
    ));
    assert!(!is_ephemeral_claim_name(
        "web-0",
        "scratch",
        "web-1-scratch"
    ));
    assert!(!is_ephemeral_claim_name("web-0", "scratch", "scratch"));
}

// ---- finalizer addition (§1.4 step 3, 4) ----

#[test]
fn adds_finalizer_to_live_pvc_without_it() {
    let pvc = without_finalizer(pvc("data"));
    let expected = Target {
        name: "data".into(),
        uid: "data-uid".into(),
        resource_version: "7".into(),
    };
    assert_eq!(
        decide(&input(pvc, vec![], None)),
        PvcDecision::Actions(vec![PvcAction::AddFinalizer(expected)])
    );
}

#[test]
fn adds_finalizer_when_only_other_finalizers_present() {
    let mut pvc = without_finalizer(pvc("data"));
    pvc.meta.finalizers.push("example.com/other".into());
    assert_eq!(
        decide(&input(pvc.clone(), vec![], None)),
        PvcDecision::Actions(vec![PvcAction::AddFinalizer(pvc.meta.target())])
    );
}

#[test]
fn live_pvc_with_finalizer_is_a_no_op() {
    assert_eq!(decide(&input(pvc("data"), vec![], None)), keep());
}

#[test]
fn live_pvc_never_asks_for_live_pods_even_when_unused() {
    let unused = with_claim(pod("web"), "other");
    assert_eq!(decide(&input(pvc("data"), vec![unused], None)), keep());
}

#[test]
fn deleting_pvc_without_the_finalizer_is_a_no_op() {
    let mut pvc = deleting(without_finalizer(pvc("data")));
    pvc.meta.finalizers.push("example.com/other".into());
    assert_eq!(decide(&input(pvc, vec![], None)), keep());
}

// ---- removal: the two-phase check (§1.5) ----

#[test]
fn unused_candidate_first_asks_for_live_pods() {
    assert_eq!(
        decide(&input(deleting(pvc("data")), vec![], None)),
        PvcDecision::NeedLivePods
    );
}

#[test]
fn unused_candidate_with_empty_live_list_loses_finalizer() {
    let pvc = deleting(pvc("data"));
    assert_eq!(
        decide(&input(pvc.clone(), vec![], Some(vec![]))),
        remove(&pvc)
    );
}

#[test]
fn removal_targets_the_resource_version_seen() {
    let mut pvc = deleting(pvc("data"));
    pvc.meta.resource_version = "42".into();
    let PvcDecision::Actions(actions) = decide(&input(pvc, vec![], Some(vec![]))) else {
        panic!("expected actions");
    };
    assert_eq!(
        actions,
        vec![PvcAction::RemoveFinalizer(Target {
            name: "data".into(),
            uid: "data-uid".into(),
            resource_version: "42".into(),
        })]
    );
}

#[test]
fn cached_user_keeps_without_live_list() {
    let user = with_claim(pod("web"), "data");
    assert_eq!(
        decide(&input(deleting(pvc("data")), vec![user], None)),
        keep()
    );
}

#[test]
fn cached_user_wins_even_if_live_list_lacks_it() {
    let user = with_claim(pod("web"), "data");
    assert_eq!(
        decide(&input(deleting(pvc("data")), vec![user], Some(vec![]))),
        keep()
    );
}

#[test]
fn cache_without_user_asks_for_live_pods() {
    let other = with_claim(pod("web"), "other");
    assert_eq!(
        decide(&input(deleting(pvc("data")), vec![other], None)),
        PvcDecision::NeedLivePods
    );
}

#[test]
fn live_user_missing_from_cache_keeps_finalizer() {
    let user = with_claim(pod("web"), "data");
    assert_eq!(
        decide(&input(deleting(pvc("data")), vec![], Some(vec![user]))),
        keep()
    );
}

#[test]
fn live_list_of_non_users_allows_removal() {
    let pvc = deleting(pvc("data"));
    let live = vec![
        with_claim(pod("a"), "other"),
        unscheduled(with_claim(pod("b"), "data")),
        pod("c"),
    ];
    assert_eq!(
        decide(&input(pvc.clone(), vec![], Some(live))),
        remove(&pvc)
    );
}

#[test]
fn stale_cache_user_gone_from_live_list_still_keeps() {
    // The cache is trusted for "used": only "unused" needs proof.
    let user = with_claim(pod("web"), "data");
    let pvc = deleting(pvc("data"));
    assert_eq!(decide(&input(pvc, vec![user], Some(vec![]))), keep());
}

// ---- PodUsesPVC (§1.2) ----

#[test]
fn running_scheduled_pod_uses_claim() {
    assert!(pod_uses_pvc(&with_claim(pod("web"), "data"), &pvc("data")));
}

#[test]
fn succeeded_pod_still_blocks() {
    let pod = in_phase(with_claim(pod("web"), "data"), PodPhase::Succeeded);
    assert!(pod_uses_pvc(&pod, &pvc("data")));
    assert_eq!(
        decide(&input(deleting(pvc("data")), vec![pod], None)),
        keep()
    );
}

#[test]
fn failed_pod_still_blocks() {
    let pod = in_phase(with_claim(pod("web"), "data"), PodPhase::Failed);
    assert!(pod_uses_pvc(&pod, &pvc("data")));
}

#[test]
fn pending_and_unknown_scheduled_pods_block() {
    for phase in [PodPhase::Pending, PodPhase::Unknown] {
        let pod = in_phase(with_claim(pod("web"), "data"), phase);
        assert!(pod_uses_pvc(&pod, &pvc("data")), "{phase:?}");
    }
}

#[test]
fn unscheduled_pod_never_blocks() {
    let pod = unscheduled(with_claim(pod("web"), "data"));
    assert!(!pod_uses_pvc(&pod, &pvc("data")));
}

#[test]
fn unscheduled_cached_pod_still_requires_live_list() {
    let pod = unscheduled(with_claim(pod("web"), "data"));
    assert_eq!(
        decide(&input(deleting(pvc("data")), vec![pod], None)),
        PvcDecision::NeedLivePods
    );
}

#[test]
fn unscheduled_live_pod_allows_removal() {
    let pvc = deleting(pvc("data"));
    let pod = unscheduled(with_claim(pod("web"), "data"));
    assert_eq!(
        decide(&input(pvc.clone(), vec![], Some(vec![pod]))),
        remove(&pvc)
    );
}

#[test]
fn pod_using_another_pvc_does_not_block() {
    assert!(!pod_uses_pvc(
        &with_claim(pod("web"), "data-2"),
        &pvc("data")
    ));
}

#[test]
fn pod_without_volumes_does_not_block() {
    assert!(!pod_uses_pvc(&pod("web"), &pvc("data")));
}

#[test]
fn pod_of_another_namespace_does_not_block() {
    let mut pod = with_claim(pod("web"), "data");
    pod.meta.namespace = "elsewhere".into();
    assert!(!pod_uses_pvc(&pod, &pvc("data")));
}

#[test]
fn any_matching_volume_blocks() {
    let pod = with_claim(with_claim(pod("web"), "logs"), "data");
    assert!(pod_uses_pvc(&pod, &pvc("data")));
}

#[test]
fn terminating_pod_with_claim_still_blocks() {
    let pod = pod_deleting(with_claim(pod("web"), "data"), Some(30));
    assert!(pod_uses_pvc(&pod, &pvc("data")));
}

#[test]
fn shut_down_pod_with_plain_claim_still_blocks() {
    // PodShutDown only releases ephemeral volumes.
    let pod = pod_deleting(with_claim(pod("web"), "data"), Some(0));
    assert!(pod_uses_pvc(&pod, &pvc("data")));
}

#[test]
fn owned_ephemeral_volume_blocks() {
    let pod = with_ephemeral(pod("web"), "scratch");
    let pvc = owned_by(pvc("web-scratch"), &pod);
    assert!(pod_uses_pvc(&pod, &pvc));
    assert_eq!(decide(&input(deleting(pvc), vec![pod], None)), keep());
}

#[test]
fn unowned_ephemeral_name_does_not_block() {
    let pod = with_ephemeral(pod("web"), "scratch");
    assert!(!pod_uses_pvc(&pod, &pvc("web-scratch")));
}

#[test]
fn ephemeral_owned_by_another_pod_does_not_block() {
    let pod = with_ephemeral(pod("web"), "scratch");
    let mut other = pod.clone();
    other.meta.uid = "previous-web-uid".into();
    let pvc = owned_by(pvc("web-scratch"), &other);
    assert!(!pod_uses_pvc(&pod, &pvc));
}

#[test]
fn ephemeral_with_non_controller_owner_does_not_block() {
    let pod = with_ephemeral(pod("web"), "scratch");
    let mut pvc = owned_by(pvc("web-scratch"), &pod);
    pvc.meta.owner_references[0].controller = false;
    assert!(!pod_uses_pvc(&pod, &pvc));
}

#[test]
fn ephemeral_of_shut_down_pod_does_not_block() {
    let pod = pod_deleting(with_ephemeral(pod("web"), "scratch"), Some(0));
    let pvc = deleting(owned_by(pvc("web-scratch"), &pod));
    assert!(!pod_uses_pvc(&pod, &pvc));
    assert_eq!(
        decide(&input(pvc.clone(), vec![pod.clone()], None)),
        PvcDecision::NeedLivePods
    );
    assert_eq!(
        decide(&input(pvc.clone(), vec![pod.clone()], Some(vec![pod]))),
        remove(&pvc)
    );
}

#[test]
fn ephemeral_of_terminating_pod_with_grace_still_blocks() {
    let pod = pod_deleting(with_ephemeral(pod("web"), "scratch"), Some(30));
    let pvc = owned_by(pvc("web-scratch"), &pod);
    assert!(pod_uses_pvc(&pod, &pvc));
}

#[test]
fn ephemeral_deleting_without_grace_period_still_blocks() {
    // Shut down needs deletionGracePeriodSeconds present and 0.
    let pod = pod_deleting(with_ephemeral(pod("web"), "scratch"), None);
    let pvc = owned_by(pvc("web-scratch"), &pod);
    assert!(pod_uses_pvc(&pod, &pvc));
}

#[test]
fn ephemeral_of_another_volume_does_not_block() {
    let pod = with_ephemeral(pod("web"), "cache");
    let pvc = owned_by(pvc("web-scratch"), &pod);
    assert!(!pod_uses_pvc(&pod, &pvc));
}

#[test]
fn ephemeral_of_unscheduled_pod_does_not_block() {
    let pod = unscheduled(with_ephemeral(pod("web"), "scratch"));
    let pvc = owned_by(pvc("web-scratch"), &pod);
    assert!(!pod_uses_pvc(&pod, &pvc));
}

#[test]
fn ephemeral_pvc_in_another_namespace_does_not_block() {
    let pod = with_ephemeral(pod("web"), "scratch");
    let mut pvc = owned_by(pvc("web-scratch"), &pod);
    pvc.meta.namespace = "elsewhere".into();
    assert!(!pod_uses_pvc(&pod, &pvc));
}

#[test]
fn succeeded_pod_with_owned_ephemeral_still_blocks() {
    let pod = in_phase(with_ephemeral(pod("web"), "scratch"), PodPhase::Succeeded);
    let pvc = owned_by(pvc("web-scratch"), &pod);
    assert!(pod_uses_pvc(&pod, &pvc));
}

#[test]
fn live_owned_ephemeral_user_keeps() {
    let pod = with_ephemeral(pod("web"), "scratch");
    let pvc = deleting(owned_by(pvc("web-scratch"), &pod));
    assert_eq!(decide(&input(pvc, vec![], Some(vec![pod]))), keep());
}

#[test]
fn recreated_pod_with_new_uid_does_not_keep_old_ephemeral_pvc() {
    // Same name, new UID (delete + re-create): the old PVC is not its own.
    let old = with_ephemeral(pod("web"), "scratch");
    let pvc = deleting(owned_by(pvc("web-scratch"), &old));
    let mut new = old.clone();
    new.meta.uid = "web-uid-2".into();
    assert_eq!(
        decide(&input(pvc.clone(), vec![new.clone()], Some(vec![new]))),
        remove(&pvc)
    );
}

#[test]
fn same_input_gives_same_decision() {
    let input = input(deleting(pvc("data")), vec![pod("a")], Some(vec![pod("b")]));
    assert_eq!(decide(&input), decide(&input));
}
