//! pvc-protection decisions (upstream-behaviour §1.4): at most one action, on the
//! key's PVC at the version seen; the finalizer is added only to a live PVC and
//! removed only from a deleting one, after a live pod list in which the host
//! itself finds no pod using the PVC (§1.2, §1.5).

use rekon_guest::model::{Pod, PvcAction, PvcInput, VolumeSource};

use super::FINALIZER;
use crate::projection::ephemeral_claim_name;
use crate::validate::{MAX_NAME, Rejected, bounded, check_count, shown, versioned};

/// Upstream makes one write per PVC key.
pub const MAX_ACTIONS: usize = 1;

/// The one write a decision can make: the PVC's finalizer list, conditional on
/// the resourceVersion the decision saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalizerWrite {
    pub resource_version: String,
    pub finalizers: Vec<String>,
}

/// Validates the whole decision; `None` when there is nothing to write.
pub fn plan(
    key: &str,
    input: &PvcInput,
    actions: &[PvcAction],
) -> Result<Option<FinalizerWrite>, Rejected> {
    check_count(key, actions.len(), MAX_ACTIONS)?;
    let Some(action) = actions.first() else {
        return Ok(None);
    };
    check(input, action).map_err(|reason| Rejected::action(key, 0, describe(action), reason))
}

fn describe(action: &PvcAction) -> String {
    let (verb, target) = match action {
        PvcAction::AddFinalizer(t) => ("add-finalizer", t),
        PvcAction::RemoveFinalizer(t) => ("remove-finalizer", t),
    };
    format!(
        "{verb} on PVC {} at resourceVersion {}",
        shown(&target.name),
        shown(&target.resource_version)
    )
}

fn check(input: &PvcInput, action: &PvcAction) -> Result<Option<FinalizerWrite>, String> {
    let pvc = &input.pvc;
    let (PvcAction::AddFinalizer(target) | PvcAction::RemoveFinalizer(target)) = action;
    bounded("target name", &target.name, MAX_NAME)?;
    bounded("target uid", &target.uid, MAX_NAME)?;
    bounded("target resourceVersion", &target.resource_version, MAX_NAME)?;
    if *target != pvc.meta.target() {
        return Err(format!(
            "targets uid {} at resourceVersion {}, but the key's PVC {} is uid {} at resourceVersion {}",
            shown(&target.uid),
            shown(&target.resource_version),
            pvc.meta.name,
            pvc.meta.uid,
            pvc.meta.resource_version
        ));
    }
    versioned("the PVC", &pvc.meta.resource_version)?;
    let mut finalizers = pvc.meta.finalizers.clone();
    match action {
        PvcAction::AddFinalizer(_) => {
            if pvc.meta.is_deleting() {
                return Err("the finalizer is never added to a deleting PVC".into());
            }
            if pvc.meta.has_finalizer(FINALIZER) {
                return Ok(None);
            }
            finalizers.push(FINALIZER.to_string());
        }
        PvcAction::RemoveFinalizer(_) => {
            if !pvc.meta.is_deleting() {
                return Err("the finalizer is removed only from a deleting PVC".into());
            }
            let Some(live) = &input.live_pods else {
                return Err(
                    "the finalizer is removed only by a decision that saw the live pod list".into(),
                );
            };
            // The host's own check of what it supplied: a user in the live list,
            // or in the cache the decision also saw, keeps the PVC.
            if let Some(user) = live
                .iter()
                .chain(&input.cached_pods)
                .find(|pod| pod_uses_pvc(pod, input))
            {
                return Err(format!(
                    "pod {}/{} (uid {}) still uses the PVC",
                    user.meta.namespace, user.meta.name, user.meta.uid
                ));
            }
            if !pvc.meta.has_finalizer(FINALIZER) {
                return Ok(None);
            }
            finalizers.retain(|f| f != FINALIZER);
        }
    }
    Ok(Some(FinalizerWrite {
        resource_version: pvc.meta.resource_version.clone(),
        finalizers,
    }))
}

/// PodUsesPVC (§1.2): a scheduled pod of the PVC's namespace with a volume naming
/// the PVC, or an ephemeral volume whose `<pod>-<volume>` PVC the pod controls
/// (unless the pod is shut down). The phase is deliberately not consulted.
pub fn pod_uses_pvc(pod: &Pod, input: &PvcInput) -> bool {
    let pvc = &input.pvc.meta;
    if !pod.is_scheduled() || pod.meta.namespace != pvc.namespace {
        return false;
    }
    pod.volumes.iter().any(|volume| match &volume.source {
        VolumeSource::PersistentVolumeClaim(claim) => *claim == pvc.name,
        VolumeSource::Ephemeral => {
            !pod.is_shut_down()
                && ephemeral_claim_name(pod, &volume.name) == pvc.name
                && pod.controls(pvc)
        }
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rekon_guest::model::{
        ObjectMeta, OwnerReference, PodPhase, PodVolume, Pvc, PvcAction::*, Target,
    };

    const KEY: &str = "ns/data";

    /// The PVC `ns/data` (uid `pvc-uid`, resourceVersion 5), also used by the
    /// controller's tests.
    pub(crate) fn pvc(deleting: bool, finalizers: &[&str]) -> Pvc {
        Pvc {
            meta: ObjectMeta {
                namespace: "ns".into(),
                name: "data".into(),
                uid: "pvc-uid".into(),
                resource_version: "5".into(),
                deletion_timestamp: deleting.then(|| "2026-01-01T00:00:00Z".into()),
                finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
                ..Default::default()
            },
        }
    }

    fn input(pvc: Pvc, live: Option<Vec<Pod>>) -> PvcInput {
        PvcInput {
            pvc,
            cached_pods: Vec::new(),
            live_pods: live,
        }
    }

    fn pod(name: &str, node: &str, source: VolumeSource) -> Pod {
        Pod {
            meta: ObjectMeta {
                namespace: "ns".into(),
                name: name.into(),
                uid: format!("uid-{name}"),
                ..Default::default()
            },
            node_name: node.into(),
            phase: PodPhase::Running,
            volumes: vec![PodVolume {
                name: "v".into(),
                source,
            }],
            ..Default::default()
        }
    }

    fn claim_volume() -> VolumeSource {
        VolumeSource::PersistentVolumeClaim("data".into())
    }

    fn target(i: &PvcInput) -> Target {
        i.pvc.meta.target()
    }

    fn rejected(result: Result<Option<FinalizerWrite>, Rejected>) -> String {
        let err = result.expect_err("rejected");
        assert_eq!(err.key, KEY);
        err.to_string()
    }

    #[test]
    fn removes_after_an_empty_live_list_keeping_other_finalizers() {
        let i = input(pvc(true, &["other", FINALIZER]), Some(vec![]));
        let write = plan(KEY, &i, &[RemoveFinalizer(target(&i))]).unwrap();
        assert_eq!(
            write,
            Some(FinalizerWrite {
                resource_version: "5".into(),
                finalizers: vec!["other".into()]
            })
        );
    }

    #[test]
    fn remove_without_the_live_list_is_rejected() {
        let i = input(pvc(true, &[FINALIZER]), None);
        let msg = rejected(plan(KEY, &i, &[RemoveFinalizer(target(&i))]));
        assert!(msg.contains("action 1 (remove-finalizer"), "{msg}");
        assert!(msg.contains("live pod list"), "{msg}");
    }

    #[test]
    fn remove_from_a_live_pvc_is_rejected() {
        let i = input(pvc(false, &[FINALIZER]), Some(vec![]));
        assert!(rejected(plan(KEY, &i, &[RemoveFinalizer(target(&i))])).contains("deleting"));
    }

    #[test]
    fn remove_while_a_live_pod_uses_the_pvc_is_rejected() {
        // Phase is not consulted: a succeeded pod that still exists blocks.
        let mut done = pod("job", "node-a", claim_volume());
        done.phase = PodPhase::Succeeded;
        let i = input(pvc(true, &[FINALIZER]), Some(vec![done]));
        let msg = rejected(plan(KEY, &i, &[RemoveFinalizer(target(&i))]));
        assert!(msg.contains("ns/job"), "{msg}");
    }

    #[test]
    fn remove_while_a_cached_pod_uses_the_pvc_is_rejected() {
        let mut i = input(pvc(true, &[FINALIZER]), Some(vec![]));
        i.cached_pods = vec![pod("web", "node-a", claim_volume())];
        assert!(rejected(plan(KEY, &i, &[RemoveFinalizer(target(&i))])).contains("ns/web"));
    }

    #[test]
    fn unscheduled_and_foreign_pods_do_not_block() {
        let mut elsewhere = pod("other-ns", "node-a", claim_volume());
        elsewhere.meta.namespace = "other".into();
        let live = vec![pod("pending", "", claim_volume()), elsewhere];
        let i = input(pvc(true, &[FINALIZER]), Some(live));
        assert!(
            plan(KEY, &i, &[RemoveFinalizer(target(&i))])
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn ephemeral_volumes_block_only_when_owned_and_not_shut_down() {
        let mut p = pvc(true, &[FINALIZER]);
        p.meta.name = "web-v".into();
        let user = pod("web", "node-a", VolumeSource::Ephemeral);
        let owned = |p: &Pvc| {
            let mut p = p.clone();
            p.meta.owner_references = vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: "web".into(),
                uid: "uid-web".into(),
                controller: true,
                block_owner_deletion: true,
            }];
            p
        };
        let key = "ns/web-v";
        let unowned = input(p.clone(), Some(vec![user.clone()]));
        assert!(plan(key, &unowned, &[RemoveFinalizer(target(&unowned))]).is_ok());

        let blocked = input(owned(&p), Some(vec![user.clone()]));
        assert!(plan(key, &blocked, &[RemoveFinalizer(target(&blocked))]).is_err());

        let mut shut_down = user;
        shut_down.meta.deletion_timestamp = Some("t".into());
        shut_down.meta.deletion_grace_period_seconds = Some(0);
        let released = input(owned(&p), Some(vec![shut_down]));
        assert!(plan(key, &released, &[RemoveFinalizer(target(&released))]).is_ok());
    }

    #[test]
    fn add_goes_only_to_a_live_pvc() {
        let i = input(pvc(false, &["other"]), None);
        let write = plan(KEY, &i, &[AddFinalizer(target(&i))]).unwrap().unwrap();
        assert_eq!(
            write.finalizers,
            vec!["other".to_string(), FINALIZER.into()]
        );

        let deleting = input(pvc(true, &[]), None);
        assert!(
            rejected(plan(KEY, &deleting, &[AddFinalizer(target(&deleting))])).contains("deleting")
        );
    }

    #[test]
    fn a_present_finalizer_or_no_action_writes_nothing() {
        let i = input(pvc(false, &[FINALIZER]), None);
        assert_eq!(plan(KEY, &i, &[AddFinalizer(target(&i))]).unwrap(), None);
        assert_eq!(plan(KEY, &i, &[]).unwrap(), None);
    }

    #[test]
    fn another_object_or_version_is_rejected() {
        let i = input(pvc(true, &[FINALIZER]), Some(vec![]));
        for (field, value) in [("name", "other"), ("uid", "other-uid"), ("rv", "4")] {
            let mut t = target(&i);
            match field {
                "name" => t.name = value.into(),
                "uid" => t.uid = value.into(),
                _ => t.resource_version = value.into(),
            }
            assert!(rejected(plan(KEY, &i, &[RemoveFinalizer(t)])).contains("key's PVC"));
        }
    }

    #[test]
    fn more_than_one_action_is_rejected_before_any_is_looked_at() {
        let i = input(pvc(true, &[FINALIZER]), Some(vec![]));
        let two = vec![RemoveFinalizer(target(&i)); 2];
        let err = plan(KEY, &i, &two).unwrap_err();
        assert_eq!(err.action, None);
        assert!(err.reason.contains("at most 1"), "{err}");
    }

    #[test]
    fn a_pvc_seen_without_a_resource_version_is_never_written() {
        let mut p = pvc(true, &[FINALIZER]);
        p.meta.resource_version.clear();
        let i = input(p, Some(vec![]));
        let msg = rejected(plan(KEY, &i, &[RemoveFinalizer(target(&i))]));
        assert!(msg.contains("empty resourceVersion"), "{msg}");
        let mut p = pvc(false, &[]);
        p.meta.resource_version.clear();
        let i = input(p, None);
        let msg = rejected(plan(KEY, &i, &[AddFinalizer(target(&i))]));
        assert!(msg.contains("empty resourceVersion"), "{msg}");
    }

    #[test]
    fn oversized_strings_are_rejected() {
        let i = input(pvc(true, &[FINALIZER]), Some(vec![]));
        let mut t = target(&i);
        t.uid = "u".repeat(MAX_NAME + 1);
        let msg = rejected(plan(KEY, &i, &[RemoveFinalizer(t)]));
        assert!(msg.contains("at most 253"), "{msg}");
        assert!(msg.len() < 300, "the message does not echo the string");
    }
}
