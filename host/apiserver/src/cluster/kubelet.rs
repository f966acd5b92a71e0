//! The "kubelet": finishes graceful deletion of scheduled pods with a grace-0 DELETE (row 6),
//! at once or after a delay, with a uid precondition so a recreated pod is never hit. It
//! follows the store's changes, so a write costs the pods it touches, not a scan of all pods.

use std::collections::BTreeMap;

use serde_json::Value;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::KubeletMode;
use crate::meta;
use crate::resources;
use crate::store::{EventType, ObjectKey};
use crate::verbs::{DeleteOptions, Store, Target};

pub async fn run(store: Store, mode: KubeletMode, shutdown: CancellationToken) {
    let delay = match mode {
        KubeletMode::Off => return,
        KubeletMode::Instant => std::time::Duration::ZERO,
        KubeletMode::Delay(delay) => delay,
    };
    let mut changes = store.subscribe();
    let mut terminating = Terminating::default();
    loop {
        terminating.update(&store);
        let now = Instant::now();
        let mut next_due: Option<Instant> = None;
        for (key, (uid, since)) in &terminating.pods {
            let due = *since + delay;
            if due > now {
                next_due = Some(next_due.map_or(due, |d| d.min(due)));
                continue;
            }
            let target = Target::new(key.resource, &key.namespace, &key.name);
            let opts = DeleteOptions {
                grace_period_seconds: Some(0),
                ..DeleteOptions::with_preconditions(Some(uid), None)
            };
            if let Err(err) = store.delete(&target, &opts) {
                tracing::debug!(pod = %key, %err, "kubelet: final delete failed");
            }
        }
        if !super::next_change(&mut changes, next_due, &shutdown).await {
            return;
        }
    }
}

/// The scheduled pods in graceful deletion, kept current from the store's changes (a scan of
/// every pod only after the history was compacted past the last look).
#[derive(Debug, Default)]
struct Terminating {
    /// Writes up to this resourceVersion have been looked at.
    seen: u64,
    /// Pod → (uid, when this kubelet first saw it terminating).
    pods: BTreeMap<ObjectKey, (String, Instant)>,
}

/// Whether the kubelet finishes this pod's deletion.
fn finishing(pod: &Value) -> bool {
    meta::is_deleting(pod)
        && meta::deletion_grace_period(pod).unwrap_or(0) > 0
        && pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty())
}

impl Terminating {
    fn update(&mut self, store: &Store) {
        let now = Instant::now();
        let pods = resources::pods();
        match store.events_since(self.seen) {
            Ok(events) => {
                for event in &events {
                    self.seen = event.rv;
                    if event.key.resource != pods {
                        continue;
                    }
                    let pod = event.object.decode();
                    if event.event_type != EventType::Deleted && finishing(&pod) {
                        self.note(event.key.clone(), meta::uid(&pod), now);
                    } else {
                        self.pods.remove(&event.key);
                    }
                }
            }
            Err(_) => {
                let (rv, current) = store.read(|objs| {
                    let current: Vec<(ObjectKey, String)> = objs
                        .iter_stored(pods, None)
                        .map(|(key, pod)| (key, pod.decode()))
                        .filter(|(_, pod)| finishing(pod))
                        .map(|(key, pod)| (key.clone(), meta::uid(&pod).to_string()))
                        .collect();
                    (objs.current_rv(), current)
                });
                self.seen = rv;
                let before = std::mem::take(&mut self.pods);
                for (key, uid) in current {
                    let since = before
                        .get(&key)
                        .filter(|(known, _)| *known == uid)
                        .map_or(now, |(_, since)| *since);
                    self.pods.insert(key, (uid, since));
                }
            }
        }
    }

    /// A pod seen terminating; a recreated pod (new uid) starts its delay again.
    fn note(&mut self, key: ObjectKey, uid: &str, now: Instant) {
        match self.pods.get_mut(&key) {
            Some((known, _)) if known == uid => {}
            _ => {
                self.pods.insert(key, (uid.to_string(), now));
            }
        }
    }
}
