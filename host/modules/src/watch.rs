//! Noticing changes: a filesystem watch on the guests directory (a ConfigMap
//! update renames `..data` inside it, which the watch sees), debounced, plus a
//! periodic rescan in case an event is lost. Every trigger is a full
//! [`Modules::reload`], which does nothing when nothing changed.

use std::time::Duration;

use notify::{RecursiveMode, Watcher};
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
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            debounce: Duration::from_millis(200),
            rescan: Duration::from_secs(30),
        }
    }
}

/// Watching stops when this is dropped.
pub struct Watching {
    _watcher: notify::RecommendedWatcher,
    task: JoinHandle<()>,
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Modules {
    /// Starts watching the guests directory; must be called within a tokio runtime.
    pub fn watch(&self, options: WatchOptions) -> Result<Watching, WatchError> {
        let (events, mut received) = mpsc::unbounded_channel::<()>();
        let error = |source| WatchError {
            dir: self.dir().display().to_string(),
            source,
        };
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            match event {
                Ok(_) => {
                    let _ = events.send(());
                }
                Err(err) => tracing::warn!(error = %err, "guests directory watch error; the periodic rescan still runs"),
            }
        })
        .map_err(error)?;
        watcher
            .watch(self.dir(), RecursiveMode::NonRecursive)
            .map_err(error)?;
        let modules = self.clone();
        let task = tokio::spawn(async move {
            let mut rescan = tokio::time::interval(options.rescan);
            rescan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            rescan.tick().await;
            loop {
                tokio::select! {
                    event = received.recv() => {
                        if event.is_none() {
                            return;
                        }
                        tokio::time::sleep(options.debounce).await;
                        while received.try_recv().is_ok() {}
                        tracing::debug!("guests directory changed; reloading");
                    }
                    _ = rescan.tick() => {}
                }
                modules.reload().await;
            }
        });
        Ok(Watching {
            _watcher: watcher,
            task,
        })
    }
}
