//! ephemeral-volume decisions (upstream-behaviour §2): the whole decision is
//! planned, from the template the host projected itself, before anything is written.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PersistentVolumeClaimSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use std::collections::HashSet;

use rekon_guest::ephemeral::{ClaimConflict, EphemeralVolume, VolumeAction, VolumeInput};
use rekon_guest::model;

use super::MAX_NAME_LENGTH;
use crate::reconcile::ReconcileError;
use crate::validate::{Rejected, check_count, shown};

/// EphemeralClaimName: `<pod>-<volume>`, no suffix.
pub fn claim_name(pod: &str, volume: &str) -> String {
    format!("{pod}-{volume}")
}

/// The PVC of one ephemeral volume: exact name, the template's labels,
/// annotations and spec, one controlling owner reference to the pod.
pub fn build_pvc(
    pod: &model::ObjectMeta,
    volume: &EphemeralVolume,
) -> Result<PersistentVolumeClaim, ReconcileError> {
    let template = &volume.template;
    let spec: PersistentVolumeClaimSpec =
        serde_json::from_str(&template.spec_json).map_err(|err| {
            ReconcileError::decision(&format!(
                "pod {}/{} volume {}: claim template spec is not a PersistentVolumeClaimSpec: {err}",
                pod.namespace, pod.name, volume.name
            ))
        })?;
    let map =
        |pairs: &[(String, String)]| (!pairs.is_empty()).then(|| pairs.iter().cloned().collect());
    Ok(PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(claim_name(&pod.name, &volume.name)),
            namespace: Some(pod.namespace.clone()),
            labels: map(&template.labels),
            annotations: map(&template.annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: pod.name.clone(),
                uid: pod.uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    })
}

/// What a valid decision asks for.
#[derive(Debug, PartialEq)]
pub struct Plan<'a> {
    /// The volumes whose PVC to create, in the decision's order.
    pub creates: Vec<&'a EphemeralVolume>,
    pub conflict: Option<ClaimConflict>,
}

/// Checks the whole decision against the input before any write: nothing for a
/// deleting pod; each create names a volume of the input once, whose PVC does
/// not exist and whose name is valid; at most one conflict, last, naming
/// `<pod>-<volume>` of a volume of the input. A refusal names the action.
pub fn plan<'a>(input: &'a VolumeInput, actions: &[VolumeAction]) -> Result<Plan<'a>, Rejected> {
    let pod = &input.pod;
    let key = format!("{}/{}", pod.namespace, pod.name);
    if pod.deleting && !actions.is_empty() {
        return Err(Rejected::decision(
            &key,
            "the pod is being deleted: no action allowed",
        ));
    }
    check_count(&key, actions.len(), input.volumes.len() + 1)?;
    let mut plan = Plan {
        creates: Vec::new(),
        conflict: None,
    };
    let mut seen = HashSet::new();
    for (index, action) in actions.iter().enumerate() {
        check(input, action, &mut seen, &mut plan)
            .map_err(|reason| Rejected::action(&key, index, describe(action), reason))?;
    }
    Ok(plan)
}

/// One action, after those before it were added to `plan`.
fn check<'a>(
    input: &'a VolumeInput,
    action: &VolumeAction,
    seen: &mut HashSet<&'a str>,
    plan: &mut Plan<'a>,
) -> Result<(), String> {
    let pod = &input.pod;
    if plan.conflict.is_some() {
        return Err("an action after a conflict".into());
    }
    let volume_name = match action {
        VolumeAction::CreatePvc(volume) => volume,
        VolumeAction::Conflict(conflict) => &conflict.volume,
    };
    let Some(volume) = input.volumes.iter().find(|v| &v.name == volume_name) else {
        return Err(format!("names no ephemeral volume: {}", shown(volume_name)));
    };
    let name = pod.claim_name(&volume.name);
    match action {
        VolumeAction::CreatePvc(_) => {
            if !seen.insert(volume.name.as_str()) {
                return Err(format!("creates the PVC of {name} twice"));
            }
            if volume.existing.is_some() {
                return Err(format!("PVC {name} already exists"));
            }
            if name.len() > MAX_NAME_LENGTH {
                return Err(format!("PVC name {name} is too long"));
            }
            plan.creates.push(volume);
        }
        VolumeAction::Conflict(conflict) => {
            if conflict.claim_name != name {
                return Err(format!(
                    "conflict names {}, not {name}",
                    shown(&conflict.claim_name)
                ));
            }
            // Upstream reports a conflict only for an existing PVC the pod
            // does not control (§2 step 2); anything else would publish
            // guest text as a Warning Event about nothing.
            let Some(existing) = &volume.existing else {
                return Err(format!("a conflict, but no PVC {name} exists"));
            };
            if existing
                .controller
                .as_ref()
                .is_some_and(|c| c.uid == pod.uid)
            {
                return Err(format!("a conflict, but the pod controls PVC {name}"));
            }
            plan.conflict = Some(conflict.clone());
        }
    }
    Ok(())
}

/// An action as a refusal names it.
fn describe(action: &VolumeAction) -> String {
    match action {
        VolumeAction::CreatePvc(volume) => format!("create-pvc {}", shown(volume)),
        VolumeAction::Conflict(conflict) => format!("conflict {}", shown(&conflict.volume)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::rejected_at;
    use rekon_guest::ephemeral::{ClaimTemplate, ControllerRef, EphemeralPod, ExistingClaim};

    fn input(deleting: bool, existing: Option<&str>) -> VolumeInput {
        let volume = |name: &str, existing: Option<ExistingClaim>| EphemeralVolume {
            name: name.into(),
            template: ClaimTemplate {
                labels: vec![("app".into(), "web".into())],
                annotations: vec![("note".into(), "n".into())],
                spec_json: r#"{"accessModes":["ReadWriteOnce"]}"#.into(),
            },
            existing,
        };
        VolumeInput {
            pod: EphemeralPod {
                namespace: "ns".into(),
                name: "web".into(),
                uid: "pu".into(),
                deleting,
            },
            volumes: vec![
                volume("a", None),
                volume(
                    "b",
                    existing.map(|uid| ExistingClaim {
                        name: "web-b".into(),
                        uid: uid.into(),
                        controller: None,
                    }),
                ),
            ],
        }
    }

    fn create(volume: &str) -> VolumeAction {
        VolumeAction::CreatePvc(volume.into())
    }

    fn conflict(volume: &str, claim_name: &str) -> VolumeAction {
        VolumeAction::Conflict(ClaimConflict {
            volume: volume.into(),
            claim_name: claim_name.into(),
            message: "not owner".into(),
        })
    }

    fn rejection(input: &VolumeInput, actions: &[VolumeAction]) -> String {
        let rejected = plan(input, actions).expect_err("rejected");
        assert_eq!(rejected.key, "ns/web");
        rejected.to_string()
    }

    #[test]
    fn a_valid_decision_plans_creates_then_the_conflict() {
        let input = input(false, Some("other"));
        let plan = plan(&input, &[create("a"), conflict("b", "web-b")]).unwrap();
        assert_eq!(
            plan.creates
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>(),
            ["a"]
        );
        assert_eq!(plan.conflict.unwrap().claim_name, "web-b");
    }

    #[test]
    fn invalid_decisions_are_refused_whole_naming_the_action() {
        let fresh = input(false, None);
        let why = rejected_at(plan(&fresh, &[create("a"), create("zzz")]), "ns/web", 1);
        assert!(
            why.contains("names no ephemeral volume") && why.contains("zzz"),
            "{why}"
        );
        assert!(rejection(&fresh, &[create("a"), create("a")]).contains("twice"));
        assert!(rejection(&fresh, &[conflict("a", "web-x")]).contains("web-x"));
        let foreign = input(false, Some("other"));
        assert!(
            rejection(&foreign, &[conflict("b", "web-b"), create("a")])
                .contains("after a conflict")
        );
        let exists = input(false, Some("pu"));
        assert!(rejection(&exists, &[create("b")]).contains("already exists"));
        let deleting = input(true, None);
        assert!(rejection(&deleting, &[create("a")]).contains("being deleted"));
        let many = vec![create("a"); 4];
        assert!(rejection(&fresh, &many).contains("4 actions, at most 3"));
        assert_eq!(plan(&deleting, &[]).unwrap().creates.len(), 0);
    }

    #[test]
    fn a_conflict_needs_an_existing_pvc_the_pod_does_not_control() {
        let fresh = input(false, None);
        let why = rejection(&fresh, &[conflict("b", "web-b")]);
        assert!(why.contains("no PVC web-b exists"), "{why}");
        let mut owned = input(false, Some("pvc-uid"));
        owned.volumes[1].existing.as_mut().unwrap().controller = Some(ControllerRef {
            kind: "Pod".into(),
            name: "web".into(),
            uid: "pu".into(),
        });
        let why = rejection(&owned, &[conflict("b", "web-b")]);
        assert!(why.contains("the pod controls"), "{why}");
        let foreign = input(false, Some("pvc-uid"));
        assert!(plan(&foreign, &[conflict("b", "web-b")]).is_ok());
    }

    #[test]
    fn a_create_longer_than_an_object_name_is_refused() {
        let mut long = input(false, None);
        long.volumes[0].name = "v".repeat(MAX_NAME_LENGTH);
        let name = long.volumes[0].name.clone();
        assert!(rejection(&long, &[create(&name)]).contains("too long"));
    }

    #[test]
    fn the_pvc_is_built_from_the_template_with_one_controlling_owner() {
        let input = input(false, None);
        let meta = model::ObjectMeta {
            namespace: "ns".into(),
            name: "web".into(),
            uid: "pu".into(),
            ..Default::default()
        };
        let pvc = build_pvc(&meta, &input.volumes[0]).unwrap();
        assert_eq!(pvc.metadata.name.as_deref(), Some("web-a"));
        assert_eq!(pvc.metadata.generate_name, None);
        assert_eq!(pvc.metadata.labels.unwrap()["app"], "web");
        assert_eq!(pvc.metadata.annotations.unwrap()["note"], "n");
        let owners = pvc.metadata.owner_references.unwrap();
        assert_eq!(owners.len(), 1);
        let owner = &owners[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("Pod", "pu"));
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));
        assert_eq!(
            pvc.spec.unwrap().access_modes,
            Some(vec!["ReadWriteOnce".to_string()])
        );
        let mut bad = input.volumes[0].clone();
        bad.template.spec_json = "[1]".into();
        let err = build_pvc(&meta, &bad).unwrap_err().to_string();
        assert!(err.contains("ns/web volume a"), "{err}");
    }
}
