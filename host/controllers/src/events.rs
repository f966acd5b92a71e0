//! Informer events as the controllers' enqueue rules see them (each
//! controller's rules are its `rules.rs`). The caller unwraps delete tombstones
//! (`DeletedFinalStateUnknown`) into plain deletes before calling.

use rekon_guest::model;

/// A pod as the enqueue rules see it: the projection plus whether any container
/// still runs (which the projection leaves out, since no decision reads it).
#[derive(Debug, Clone, Copy)]
pub struct PodView<'a> {
    pub pod: &'a model::Pod,
    pub container_running: bool,
}

/// A pod informer event.
#[derive(Debug, Clone, Copy)]
pub enum PodEvent<'a> {
    Added(PodView<'a>),
    Updated { old: PodView<'a>, new: PodView<'a> },
    Deleted(PodView<'a>),
}

/// An informer event of any other kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Added,
    Updated,
    Deleted,
}

/// Append `item` unless present; enqueue lists are short, order is kept.
pub(crate) fn push_unique<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    use rekon_guest::model;

    pub fn pod(name: &str, uid: &str) -> model::Pod {
        let mut p = model::Pod::default();
        p.meta.namespace = "ns".into();
        p.meta.name = name.into();
        p.meta.uid = uid.into();
        p
    }

    pub fn scheduled(mut p: model::Pod) -> model::Pod {
        p.node_name = "node-1".into();
        p
    }

    pub fn deleting(mut p: model::Pod) -> model::Pod {
        p.meta.deletion_timestamp = Some("2024-01-01T00:00:00Z".into());
        p.meta.deletion_grace_period_seconds = Some(30);
        p
    }

    pub fn with_phase(mut p: model::Pod, phase: model::PodPhase) -> model::Pod {
        p.phase = phase;
        p
    }
}
