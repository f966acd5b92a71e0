//! PVC protection's event rules (upstream-behaviour §1.1, §1.3): pure
//! functions over the model records. Keys are PVC `namespace/name`.

use rekon_guest::model;

use crate::cache::ObjectKey;
use crate::events::{PodEvent, PodView, push_unique};
use crate::projection::pod_pvc_keys;

pub const FINALIZER: &str = "kubernetes.io/pvc-protection";

/// Not deleting and the finalizer is missing: the controller adds it.
pub fn needs_finalizer(pvc: &model::Pvc) -> bool {
    !pvc.meta.is_deleting() && !pvc.meta.has_finalizer(FINALIZER)
}

/// Deleting and the finalizer is still there: the controller may remove it.
pub fn deletion_candidate(pvc: &model::Pvc) -> bool {
    pvc.meta.is_deleting() && pvc.meta.has_finalizer(FINALIZER)
}

/// PodTerminated (used for enqueueing only): a terminal phase, or deleting with no
/// container (init, regular or ephemeral) still running.
pub fn pod_terminated(pod: PodView<'_>) -> bool {
    matches!(
        pod.pod.phase,
        model::PodPhase::Succeeded | model::PodPhase::Failed
    ) || (pod.pod.meta.is_deleting() && !pod.container_running)
}

/// §1.3 rule 1: a PVC add or update enqueues the PVC if there is something to do;
/// deletes are ignored.
pub fn key_for_pvc_event(pvc: &model::Pvc, deleted: bool) -> Option<ObjectKey> {
    (!deleted && (needs_finalizer(pvc) || deletion_candidate(pvc)))
        .then(|| ObjectKey::of(&pvc.meta))
}

/// §1.3 rule 2: the PVCs a pod event may release.
///
/// The new (or deleted) pod counts if the event is a delete, the pod terminated,
/// or it is unscheduled; a running scheduled pod cannot release anything. An
/// update that changed the UID (delete + re-create under the same name, k/k
/// #80475) also releases every PVC of the old pod.
pub fn keys_for_pod_event(event: PodEvent<'_>) -> Vec<ObjectKey> {
    let (pod, deleted, replaced) = match event {
        PodEvent::Added(pod) => (pod, false, None),
        PodEvent::Updated { old, new } => {
            let replaced = (old.pod.meta.uid != new.pod.meta.uid).then_some(old);
            (new, false, replaced)
        }
        PodEvent::Deleted(pod) => (pod, true, None),
    };
    let mut keys = if deleted || pod_terminated(pod) || !pod.pod.is_scheduled() {
        pod_pvc_keys(pod.pod)
    } else {
        Vec::new()
    };
    if let Some(old) = replaced {
        for key in pod_pvc_keys(old.pod) {
            push_unique(&mut keys, key);
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::fixtures::*;
    use model::PodPhase::*;

    fn pvc(finalizer: bool, deleting: bool) -> model::Pvc {
        let mut p = model::Pvc::default();
        p.meta.namespace = "ns".into();
        p.meta.name = "data".into();
        if finalizer {
            p.meta.finalizers = vec!["other".into(), FINALIZER.into()];
        }
        if deleting {
            p.meta.deletion_timestamp = Some("2024-01-01T00:00:00Z".into());
        }
        p
    }

    fn with_volumes(mut p: model::Pod) -> model::Pod {
        p.volumes = vec![
            model::PodVolume {
                name: "data".into(),
                source: model::VolumeSource::PersistentVolumeClaim("shared".into()),
            },
            model::PodVolume {
                name: "scratch".into(),
                source: model::VolumeSource::Ephemeral,
            },
            model::PodVolume {
                name: "again".into(),
                source: model::VolumeSource::PersistentVolumeClaim("shared".into()),
            },
        ];
        p
    }

    fn view(pod: &model::Pod) -> PodView<'_> {
        PodView {
            pod,
            container_running: false,
        }
    }

    fn running(pod: &model::Pod) -> PodView<'_> {
        PodView {
            pod,
            container_running: true,
        }
    }

    fn names(keys: &[ObjectKey]) -> Vec<String> {
        keys.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn predicates_follow_finalizer_and_deletion() {
        assert!(needs_finalizer(&pvc(false, false)));
        assert!(!needs_finalizer(&pvc(true, false)));
        assert!(
            !needs_finalizer(&pvc(false, true)),
            "never added to a deleting PVC"
        );
        assert!(deletion_candidate(&pvc(true, true)));
        assert!(!deletion_candidate(&pvc(false, true)));
        assert!(!deletion_candidate(&pvc(true, false)));
    }

    #[test]
    fn pvc_add_or_update_enqueues_only_when_there_is_work_and_delete_never() {
        assert_eq!(
            key_for_pvc_event(&pvc(false, false), false),
            Some(ObjectKey::new("ns", "data"))
        );
        assert_eq!(
            key_for_pvc_event(&pvc(true, true), false),
            Some(ObjectKey::new("ns", "data"))
        );
        assert_eq!(key_for_pvc_event(&pvc(true, false), false), None);
        assert_eq!(key_for_pvc_event(&pvc(false, true), false), None);
        assert_eq!(key_for_pvc_event(&pvc(true, true), true), None);
        assert_eq!(key_for_pvc_event(&pvc(false, false), true), None);
    }

    #[test]
    fn pod_terminated_by_phase_or_deletion_without_running_containers() {
        let p = scheduled(pod("p", "u"));
        assert!(!pod_terminated(view(&p)), "pending, not deleting");
        assert!(pod_terminated(running(&with_phase(p.clone(), Succeeded))));
        assert!(pod_terminated(running(&with_phase(p.clone(), Failed))));
        assert!(!pod_terminated(view(&with_phase(p.clone(), Running))));
        let d = deleting(p.clone());
        assert!(pod_terminated(view(&d)), "deleting, nothing runs");
        assert!(!pod_terminated(running(&d)), "deleting, a container runs");
    }

    #[test]
    fn a_running_scheduled_pod_is_ignored() {
        let p = with_volumes(with_phase(scheduled(pod("web", "u")), Running));
        assert!(keys_for_pod_event(PodEvent::Added(running(&p))).is_empty());
        assert!(
            keys_for_pod_event(PodEvent::Updated {
                old: running(&p),
                new: running(&p)
            })
            .is_empty()
        );
    }

    #[test]
    fn an_unscheduled_pod_enqueues_its_pvcs() {
        let p = with_volumes(pod("web", "u"));
        assert_eq!(
            names(&keys_for_pod_event(PodEvent::Added(running(&p)))),
            ["ns/shared", "ns/web-scratch"]
        );
    }

    #[test]
    fn a_terminated_pod_enqueues_its_pvcs() {
        let done = with_volumes(with_phase(scheduled(pod("web", "u")), Succeeded));
        let old = with_volumes(with_phase(scheduled(pod("web", "u")), Running));
        let keys = keys_for_pod_event(PodEvent::Updated {
            old: running(&old),
            new: view(&done),
        });
        assert_eq!(names(&keys), ["ns/shared", "ns/web-scratch"]);

        let stopping = deleting(old.clone());
        assert_eq!(
            keys_for_pod_event(PodEvent::Updated {
                old: running(&old),
                new: view(&stopping)
            })
            .len(),
            2,
            "deleting and no container runs"
        );
        assert!(
            keys_for_pod_event(PodEvent::Updated {
                old: running(&old),
                new: running(&stopping)
            })
            .is_empty(),
            "deleting but still running"
        );
    }

    #[test]
    fn a_delete_always_enqueues_even_a_running_scheduled_pod() {
        let p = with_volumes(with_phase(scheduled(pod("web", "u")), Running));
        assert_eq!(
            names(&keys_for_pod_event(PodEvent::Deleted(running(&p)))),
            ["ns/shared", "ns/web-scratch"]
        );
    }

    #[test]
    fn a_uid_change_on_update_releases_the_old_pods_pvcs() {
        // k/k #80475: delete + re-create under the same name arrives as an update.
        let mut old = with_phase(scheduled(pod("web", "old-uid")), Running);
        old.volumes = vec![model::PodVolume {
            name: "data".into(),
            source: model::VolumeSource::PersistentVolumeClaim("old-pvc".into()),
        }];
        let new = with_volumes(with_phase(scheduled(pod("web", "new-uid")), Running));
        let keys = keys_for_pod_event(PodEvent::Updated {
            old: running(&old),
            new: running(&new),
        });
        assert_eq!(
            names(&keys),
            ["ns/old-pvc"],
            "new pod runs: only the old one's"
        );

        let same_uid_new = {
            let mut p = new.clone();
            p.meta.uid = "old-uid".into();
            p
        };
        assert!(
            keys_for_pod_event(PodEvent::Updated {
                old: running(&old),
                new: running(&same_uid_new)
            })
            .is_empty(),
            "same UID: a plain update"
        );
    }

    #[test]
    fn a_uid_change_merges_old_and_new_keys_without_duplicates() {
        let old = with_volumes(scheduled(pod("web", "old-uid")));
        let new = with_volumes(pod("web", "new-uid")); // unscheduled: counts too
        let keys = keys_for_pod_event(PodEvent::Updated {
            old: running(&old),
            new: view(&new),
        });
        assert_eq!(names(&keys), ["ns/shared", "ns/web-scratch"]);
    }
}
