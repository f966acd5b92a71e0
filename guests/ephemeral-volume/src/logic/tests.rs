use super::*;
use rekon_guest::ephemeral::{ClaimTemplate, ControllerRef};

fn pod() -> EphemeralPod {
    EphemeralPod {
        namespace: "ns".into(),
        name: "web".into(),
        uid: "pod-uid".into(),
        deleting: false,
    }
}

fn volume(name: &str) -> EphemeralVolume {
    EphemeralVolume {
        name: name.into(),
        template: ClaimTemplate {
            spec_json: r#"{"accessModes":["ReadWriteOnce"]}"#.into(),
            ..Default::default()
        },
        existing: None,
    }
}

fn existing(mut volume: EphemeralVolume, controller_uid: Option<&str>) -> EphemeralVolume {
    volume.existing = Some(ExistingClaim {
        name: pod().claim_name(&volume.name),
        uid: "pvc-uid".into(),
        controller: controller_uid.map(|uid| ControllerRef {
            kind: "Pod".into(),
            name: "web".into(),
            uid: uid.into(),
        }),
    });
    volume
}

fn input(volumes: Vec<EphemeralVolume>) -> VolumeInput {
    VolumeInput {
        pod: pod(),
        volumes,
    }
}

fn create(volume: &str) -> VolumeAction {
    VolumeAction::CreatePvc(volume.into())
}

fn conflicts(decision: &VolumeDecision) -> Vec<&ClaimConflict> {
    decision
        .actions
        .iter()
        .filter_map(|a| match a {
            VolumeAction::Conflict(c) => Some(c),
            VolumeAction::CreatePvc(_) => None,
        })
        .collect()
}

#[test]
fn claim_name_is_pod_dash_volume() {
    assert_eq!(pod().claim_name("scratch"), "web-scratch");
}

#[test]
fn missing_pvcs_are_created_in_volume_order() {
    let decision = decide(&input(vec![volume("a"), volume("b")]));
    assert_eq!(decision.actions, vec![create("a"), create("b")]);
}

#[test]
fn owned_pvc_needs_nothing() {
    let decision = decide(&input(vec![existing(volume("a"), Some("pod-uid"))]));
    assert!(decision.actions.is_empty(), "{decision:?}");
}

#[test]
fn deleting_pod_gets_nothing_even_with_missing_pvcs() {
    let mut input = input(vec![volume("a"), existing(volume("b"), Some("other"))]);
    input.pod.deleting = true;
    assert_eq!(decide(&input), VolumeDecision::default());
}

#[test]
fn foreign_pvc_is_a_conflict_naming_volume_claim_and_controller() {
    let decision = decide(&input(vec![existing(volume("a"), Some("old-uid"))]));
    let [conflict] = conflicts(&decision)[..] else {
        panic!("one conflict expected: {decision:?}");
    };
    assert_eq!(conflict.volume, "a");
    assert_eq!(conflict.claim_name, "web-a");
    assert!(
        conflict.message.contains("ns/web-a"),
        "{}",
        conflict.message
    );
    assert!(conflict.message.contains("old-uid"), "{}", conflict.message);
}

#[test]
fn pvc_without_controller_is_a_conflict() {
    let decision = decide(&input(vec![existing(volume("a"), None)]));
    let [conflict] = conflicts(&decision)[..] else {
        panic!("one conflict expected: {decision:?}");
    };
    assert!(
        conflict.message.contains("no controller"),
        "{}",
        conflict.message
    );
}

#[test]
fn first_conflict_stops_the_decision_after_earlier_creates() {
    let decision = decide(&input(vec![
        volume("a"),
        existing(volume("b"), None),
        volume("c"),
        existing(volume("d"), Some("x")),
    ]));
    assert_eq!(decision.actions.len(), 2, "{decision:?}");
    assert_eq!(decision.actions[0], create("a"));
    assert_eq!(conflicts(&decision)[0].volume, "b");
}

#[test]
fn names_up_to_253_characters_are_created_longer_ones_conflict() {
    let mut at_limit = input(vec![volume(&"v".repeat(MAX_NAME_LENGTH - 4))]);
    at_limit.pod.name = "abc".into();
    assert_eq!(pod_claim_len(&at_limit), MAX_NAME_LENGTH);
    assert!(matches!(
        decide(&at_limit).actions[..],
        [VolumeAction::CreatePvc(_)]
    ));

    let mut over = at_limit.clone();
    over.pod.name = "abcd".into();
    let decision = decide(&over);
    let [conflict] = conflicts(&decision)[..] else {
        panic!("one conflict expected: {decision:?}");
    };
    assert!(conflict.message.contains("254"), "{}", conflict.message);
}

fn pod_claim_len(input: &VolumeInput) -> usize {
    input.pod.claim_name(&input.volumes[0].name).len()
}

#[test]
fn an_existing_pvc_is_never_refused_for_its_name_length() {
    let mut input = input(vec![existing(volume(&"v".repeat(300)), Some("pod-uid"))]);
    input.volumes[0].existing.as_mut().unwrap().name = input.pod.claim_name(&"v".repeat(300));
    assert!(decide(&input).actions.is_empty());
}
