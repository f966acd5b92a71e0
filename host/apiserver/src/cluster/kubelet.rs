//! The "kubelet": finishes graceful deletion of scheduled pods with a grace-0 DELETE (row 6),
//! at once or after a delay, with a uid precondition so a recreated pod is never hit.

use std::collections::HashMap;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::KubeletMode;
use crate::meta;
use crate::registry::{DeleteOptions, Store, Target};
use crate::resources;

pub async fn run(store: Store, mode: KubeletMode, shutdown: CancellationToken) {
    let delay = match mode {
        KubeletMode::Off => return,
        KubeletMode::Instant => std::time::Duration::ZERO,
        KubeletMode::Delay(delay) => delay,
    };
    let mut changes = store.subscribe();
    // uid → when this kubelet first saw the pod terminating.
    let mut seen: HashMap<String, Instant> = HashMap::new();
    loop {
        let now = Instant::now();
        let terminating = store.read(|objs| {
            objs.iter_stored(resources::pods(), None)
                .filter(|(_, pod)| {
                    meta::is_deleting(pod)
                        && meta::deletion_grace_period(pod).unwrap_or(0) > 0
                        && pod
                            .pointer("/spec/nodeName")
                            .and_then(|n| n.as_str())
                            .is_some_and(|n| !n.is_empty())
                })
                .map(|(key, pod)| (key.clone(), meta::uid(pod).to_string()))
                .collect::<Vec<_>>()
        });
        seen.retain(|uid, _| terminating.iter().any(|(_, u)| u == uid));
        let mut next_due: Option<Instant> = None;
        for (key, uid) in terminating {
            let due = *seen.entry(uid.clone()).or_insert(now) + delay;
            if due > now {
                next_due = Some(next_due.map_or(due, |d| d.min(due)));
                continue;
            }
            let target = Target::new(key.resource, &key.namespace, &key.name);
            let opts = DeleteOptions {
                grace_period_seconds: Some(0),
                ..DeleteOptions::with_preconditions(Some(&uid), None)
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
