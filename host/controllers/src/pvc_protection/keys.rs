//! Which PVC keys a watch event enqueues (upstream-behaviour §1.3).

use super::{PvcProtection, rules};
use crate::cache::{Change, ObjectKey};
use crate::events::PodEvent;
use crate::projection::{CachedPod, CachedPvc};

impl PvcProtection {
    /// §1.3 rule 1: PVC add/update enqueue when there is work; deletes are ignored.
    pub fn keys_for_pvc(change: &Change<CachedPvc>) -> Vec<ObjectKey> {
        let (cached, deleted) = match change {
            Change::Applied { new, .. } => (new, false),
            Change::Deleted(old) => (old, true),
        };
        rules::key_for_pvc_event(&cached.pvc, deleted)
            .into_iter()
            .collect()
    }

    /// §1.3 rule 2: pod events that may release a PVC, incl. a UID change on update.
    pub fn keys_for_pod(change: &Change<CachedPod>) -> Vec<ObjectKey> {
        let event = match change {
            Change::Applied { old: None, new } => PodEvent::Added(new.view()),
            Change::Applied {
                old: Some(old),
                new,
            } => PodEvent::Updated {
                old: old.view(),
                new: new.view(),
            },
            Change::Deleted(old) => PodEvent::Deleted(old.view()),
        };
        rules::keys_for_pod_event(event)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rekon_guest::model;

    use super::*;
    use crate::pvc_protection::FINALIZER;
    use crate::pvc_protection::validate::tests::pvc;
    use rekon_guest::model::{ObjectMeta, PodPhase, PodVolume, Pvc, VolumeSource};

    fn cached(name: &str, uid: &str, node: &str, phase: PodPhase, running: bool) -> Arc<CachedPod> {
        Arc::new(CachedPod {
            pod: model::Pod {
                meta: ObjectMeta {
                    namespace: "ns".into(),
                    name: name.into(),
                    uid: uid.into(),
                    ..Default::default()
                },
                node_name: node.into(),
                phase,
                volumes: vec![PodVolume {
                    name: "v".into(),
                    source: VolumeSource::PersistentVolumeClaim("data".into()),
                }],
                ..Default::default()
            },
            container_running: running,
            ..Default::default()
        })
    }

    #[test]
    fn pvc_events_enqueue_only_when_there_is_work() {
        let key = |p: Pvc| {
            PvcProtection::keys_for_pvc(&Change::Applied {
                old: None,
                new: Arc::new(CachedPvc::observed_now(p)),
            })
        };
        assert_eq!(key(pvc(false, &[])).len(), 1, "missing finalizer");
        assert_eq!(key(pvc(true, &[FINALIZER])).len(), 1, "deletion candidate");
        assert!(key(pvc(false, &[FINALIZER])).is_empty(), "nothing to do");
        assert!(key(pvc(true, &[])).is_empty(), "deleting, already released");
        assert!(
            PvcProtection::keys_for_pvc(&Change::Deleted(Arc::new(CachedPvc::observed_now(pvc(
                true,
                &[]
            )))))
            .is_empty()
        );
    }

    #[test]
    fn running_scheduled_pods_are_ignored_but_terminated_unscheduled_and_deleted_enqueue() {
        let applied = |p| PvcProtection::keys_for_pod(&Change::Applied { old: None, new: p });
        assert!(applied(cached("a", "1", "node", PodPhase::Running, true)).is_empty());
        assert_eq!(
            applied(cached("a", "1", "", PodPhase::Pending, false)).len(),
            1
        );
        assert_eq!(
            applied(cached("a", "1", "node", PodPhase::Succeeded, false)).len(),
            1
        );
        assert_eq!(
            PvcProtection::keys_for_pod(&Change::Deleted(cached(
                "a",
                "1",
                "node",
                PodPhase::Running,
                true
            ))),
            vec![ObjectKey::new("ns", "data")]
        );
    }

    #[test]
    fn deleting_pod_enqueues_only_once_no_container_runs() {
        let mut pod = cached("a", "1", "node", PodPhase::Running, true);
        Arc::make_mut(&mut pod).pod.meta.deletion_timestamp = Some("t".into());
        let applied = |p| PvcProtection::keys_for_pod(&Change::Applied { old: None, new: p });
        assert!(applied(pod.clone()).is_empty());
        Arc::make_mut(&mut pod).container_running = false;
        assert_eq!(applied(pod).len(), 1);
    }

    #[test]
    fn uid_change_on_update_treats_the_old_pod_as_deleted() {
        let old = cached("a", "old-uid", "node", PodPhase::Running, true);
        let mut new = cached("a", "new-uid", "node", PodPhase::Running, true);
        Arc::make_mut(&mut new).pod.volumes[0].source =
            VolumeSource::PersistentVolumeClaim("other".into());
        let keys = PvcProtection::keys_for_pod(&Change::Applied {
            old: Some(old),
            new,
        });
        assert_eq!(keys, vec![ObjectKey::new("ns", "data")]);
    }
}
