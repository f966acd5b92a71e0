//! Which pod keys a watch event enqueues (upstream-behaviour §2).

use super::EphemeralVolumeController;
use super::validate::claim_name;
use crate::cache::{Change, ObjectKey};
use crate::projection::{CachedPod, CachedPvc, PODS_BY_PVC};

/// Pod add with at least one ephemeral volume, not deleting; an update only
/// when the UID changed (delete + re-create seen as an update): the spec is
/// immutable. Pod deletes need nothing (the garbage collector removes the PVCs).
pub(super) fn keys_for_pod(change: &Change<CachedPod>) -> Vec<ObjectKey> {
    let Change::Applied { old, new } = change else {
        return Vec::new();
    };
    let fresh = old
        .as_ref()
        .is_none_or(|old| old.pod.meta.uid != new.pod.meta.uid);
    if fresh && !new.ephemeral.is_empty() && !new.pod.meta.is_deleting() {
        vec![ObjectKey::of(&new.pod.meta)]
    } else {
        Vec::new()
    }
}

impl EphemeralVolumeController {
    /// Any PVC event enqueues the pods whose ephemeral volume names it: a delete
    /// re-creates an owned PVC, an add or update settles a conflict.
    pub(super) fn keys_for_pvc(&self, change: &Change<CachedPvc>) -> Vec<ObjectKey> {
        let pvc = match change {
            Change::Applied { new, .. } => {
                self.created.lock().unwrap().on_add_or_update(&new.pvc);
                &new.pvc
            }
            Change::Deleted(old) => {
                self.created.lock().unwrap().on_delete(&old.pvc);
                &old.pvc
            }
        };
        let index = format!("{}/{}", pvc.meta.namespace, pvc.meta.name);
        self.ctx
            .caches
            .pods
            .by_index(PODS_BY_PVC, &index)
            .iter()
            .filter(|pod| {
                pod.ephemeral
                    .iter()
                    .any(|t| claim_name(&pod.pod.meta.name, &t.volume) == pvc.meta.name)
            })
            .map(|pod| ObjectKey::of(&pod.pod.meta))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::projection::tests::k8s_pod;

    #[test]
    fn pods_are_enqueued_on_add_and_uid_change_only() {
        let pod =
            |uid: &str, deleting: bool| Arc::new(CachedPod::from_pod(&k8s_pod(uid, deleting)));
        let key = vec![ObjectKey::new("ns", "web")];
        let added = Change::Applied {
            old: None,
            new: pod("u1", false),
        };
        assert_eq!(keys_for_pod(&added), key);
        let same = Change::Applied {
            old: Some(pod("u1", false)),
            new: pod("u1", false),
        };
        assert!(keys_for_pod(&same).is_empty());
        let recreated = Change::Applied {
            old: Some(pod("u1", false)),
            new: pod("u2", false),
        };
        assert_eq!(keys_for_pod(&recreated), key);
        let deleting = Change::Applied {
            old: None,
            new: pod("u1", true),
        };
        assert!(keys_for_pod(&deleting).is_empty());
        assert!(keys_for_pod(&Change::Deleted(pod("u1", false))).is_empty());
    }
}
