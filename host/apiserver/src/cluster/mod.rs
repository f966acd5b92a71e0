//! Cluster behaviour outside the API server proper (issue item 5), each optional: a garbage
//! collector (with the namespace controller's cleanup), a kubelet that finishes graceful pod
//! deletion. They run as background tasks that use the store's write and watch API like any
//! controller would. (PVC-protection admission is part of create, in `verbs`.)

pub mod gc;
pub mod kubelet;

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::verbs::Store;

/// Whether and how the kubelet finishes graceful deletion of scheduled pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KubeletMode {
    /// Scheduled pods stay Terminating until someone deletes them with grace 0 (like a cluster
    /// without nodes).
    #[default]
    Off,
    /// Deleted with grace 0 as soon as they are seen terminating.
    Instant,
    /// Deleted with grace 0 this long after they are seen terminating.
    Delay(Duration),
}

pub fn spawn(
    store: &Store,
    garbage_collector: bool,
    kubelet: KubeletMode,
    shutdown: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    if garbage_collector {
        tasks.push(tokio::spawn(gc::run(store.clone(), shutdown.clone())));
    }
    if kubelet != KubeletMode::Off {
        tasks.push(tokio::spawn(kubelet::run(
            store.clone(),
            kubelet,
            shutdown.clone(),
        )));
    }
    tasks
}

/// Waits for the next write (or `deadline`), then a short quiet period so a burst of writes
/// is handled by one pass. False when the server is shutting down.
pub(crate) async fn next_change(
    changes: &mut tokio::sync::watch::Receiver<u64>,
    deadline: Option<tokio::time::Instant>,
    shutdown: &CancellationToken,
) -> bool {
    let wait_deadline = async {
        match deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        changed = changes.changed() => {
            if changed.is_err() {
                return false;
            }
        }
        _ = wait_deadline => {}
        _ = shutdown.cancelled() => return false,
    }
    tokio::time::sleep(Duration::from_millis(2)).await;
    !shutdown.is_cancelled()
}
