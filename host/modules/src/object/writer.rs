//! Writing `DecisionModule` statuses off the decision path: the latest wanted
//! status per object is kept (older ones are dropped unwritten), and one task
//! writes them with the object's resourceVersion; on a conflict it reads the
//! object again and writes again if the status still differs.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kube::Api;
use kube::api::PostParams;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::object::resource::{DecisionModule, DecisionModuleStatus};

/// Attempts per write before waiting for the next submission.
const ATTEMPTS: usize = 4;

/// Submits statuses to the writing task; dropping it stops the task.
pub struct StatusWriter {
    pending: Arc<Mutex<BTreeMap<String, DecisionModule>>>,
    wake: Arc<Notify>,
    task: JoinHandle<()>,
}

impl StatusWriter {
    pub fn start(api: Api<DecisionModule>) -> Self {
        let pending: Arc<Mutex<BTreeMap<String, DecisionModule>>> = Arc::default();
        let wake = Arc::new(Notify::new());
        let task = tokio::spawn({
            let (pending, wake) = (pending.clone(), wake.clone());
            async move {
                loop {
                    wake.notified().await;
                    let batch = std::mem::take(&mut *pending.lock().unwrap());
                    for (name, object) in batch {
                        write(&api, &name, object).await;
                    }
                }
            }
        });
        Self {
            pending,
            wake,
            task,
        }
    }

    /// Asks for `object`'s status to become `status` (never waits).
    pub fn submit(&self, object: &DecisionModule, status: DecisionModuleStatus) {
        let Some(name) = object.metadata.name.clone() else {
            return;
        };
        let mut wanted = object.clone();
        wanted.status = Some(status);
        self.pending.lock().unwrap().insert(name, wanted);
        self.wake.notify_one();
    }
}

impl Drop for StatusWriter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn write(api: &Api<DecisionModule>, name: &str, mut wanted: DecisionModule) {
    for _ in 0..ATTEMPTS {
        match api
            .replace_status(name, &PostParams::default(), &wanted)
            .await
        {
            Ok(_) => return,
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let status_wanted: Option<DecisionModuleStatus> = wanted.status.take();
                match api.get_opt(name).await {
                    Ok(Some(current)) if current.status == status_wanted => return,
                    Ok(Some(current)) => {
                        wanted = current;
                        wanted.status = status_wanted;
                    }
                    Ok(None) => return,
                    Err(err) => {
                        tracing::warn!(object = name, error = %err, "cannot read the DecisionModule to write its status");
                        return;
                    }
                }
            }
            Err(kube::Error::Api(status)) if status.code == 404 => return,
            Err(err) => {
                tracing::warn!(object = name, error = %err, "cannot write the DecisionModule status; the next change retries");
                return;
            }
        }
    }
}
