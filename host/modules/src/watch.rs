//! Noticing changes: a filesystem watch on the guests directory (a ConfigMap
//! update renames `..data` inside it, which the watch sees), debounced, plus a
//! periodic rescan in case an event is lost. Every trigger is a full
//! [`Modules::reload`], which does nothing when nothing changed. Only events
//! that change the directory count: a reload reads every file, and counting
//! those reads as changes would reload forever.
//!
//! The same task keeps the status file current: decision and shadow counts
//! change without any reload.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::manager::Modules;

#[derive(Debug, thiserror::Error)]
#[error("cannot watch the guests directory {dir}: {source}")]
pub struct WatchError {
    dir: String,
    source: notify::Error,
}

#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// Wait this long after an event for the rest of a burst (a ConfigMap
    /// update is several renames and removals).
    pub debounce: Duration,
    /// Reload at least this often.
    pub rescan: Duration,
    /// Rewrite the status file this often when its counts changed.
    pub status_refresh: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            debounce: Duration::from_millis(200),
            rescan: Duration::from_secs(30),
            status_refresh: Duration::from_secs(2),
        }
    }
}

/// Whether `kind` may mean the directory changed. Opening, reading and
/// closing a file unmodified (what every reload does) do not.
fn is_change(kind: &EventKind) -> bool {
    !matches!(kind, EventKind::Access(_))
}

/// Watching stops when this is dropped.
pub struct Watching {
    _watcher: Option<notify::RecommendedWatcher>,
    task: JoinHandle<()>,
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Modules {
    /// Starts watching the guests directory (if there is one), and promoting
    /// shadows whose evidence is in; must be called within a tokio runtime.
    pub fn watch(&self, options: WatchOptions) -> Result<Watching, WatchError> {
        let (events, mut received) = mpsc::unbounded_channel::<()>();
        let watcher = match self.dir() {
            Some(dir) => Some(watch_dir(dir, events)?),
            None => None,
        };
        let modules = self.clone();
        let task = tokio::spawn(async move {
            let mut rescan = tokio::time::interval(options.rescan);
            rescan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            rescan.tick().await;
            let mut status = tokio::time::interval(options.status_refresh);
            status.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    event = received.recv(), if modules.dir().is_some() => {
                        if event.is_none() {
                            return;
                        }
                        tokio::time::sleep(options.debounce).await;
                        while received.try_recv().is_ok() {}
                        tracing::debug!("guests directory changed; reloading");
                    }
                    _ = rescan.tick() => {}
                    _ = status.tick() => {
                        modules.promote_due();
                        modules.refresh_status();
                        continue;
                    }
                }
                // Loading failures are refusals; a panic that escapes them
                // still must not end the task that applies later changes.
                if AssertUnwindSafe(modules.reload())
                    .catch_unwind()
                    .await
                    .is_err()
                {
                    tracing::error!(
                        "reloading the guests directory panicked; the next change or rescan retries"
                    );
                }
            }
        });
        Ok(Watching {
            _watcher: watcher,
            task,
        })
    }
}

/// A filesystem watch on `dir` that sends on `events` at every change.
fn watch_dir(
    dir: &std::path::Path,
    events: mpsc::UnboundedSender<()>,
) -> Result<notify::RecommendedWatcher, WatchError> {
    let error = |source| WatchError {
        dir: dir.display().to_string(),
        source,
    };
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            match event {
                Ok(event) if is_change(&event.kind) => {
                    let _ = events.send(());
                }
                Ok(_) => {}
                Err(err) => tracing::warn!(error = %err, "guests directory watch error; the periodic rescan still runs"),
            }
        })
    .map_err(error)?;
    watcher
        .watch(dir, RecursiveMode::NonRecursive)
        .map_err(error)?;
    Ok(watcher)
}
