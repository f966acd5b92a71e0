//! Writing `DecisionModule` statuses off the decision path: the latest wanted
//! status per object is kept (older ones are dropped unwritten), and one task
//! writes them with the object's resourceVersion; on a conflict it reads the
//! object again and writes again if the status still differs.
//!
//! Writes go out only through the client [`StatusClient`] gives: the leader's
//! fenced client (`rekon_controllers::fence`), so a replica that lost its
//! leadership cannot overwrite what the new leader wrote. Without one (not
//! leading) wanted statuses are dropped: the leader computes its own.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::{Api, Client};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::object::resource::{DecisionModule, DecisionModuleStatus};

/// Attempts per write before waiting for the next submission.
const ATTEMPTS: usize = 4;

/// The client statuses are written with now; `None` while this replica does
/// not lead.
pub type StatusClient = Arc<dyn Fn() -> Option<Client> + Send + Sync>;

/// Submits statuses to the writing task; dropping it stops the task.
pub struct StatusWriter {
    pending: Arc<Mutex<BTreeMap<String, DynamicObject>>>,
    wake: Arc<Notify>,
    task: JoinHandle<()>,
}

impl StatusWriter {
    pub fn start(status_client: StatusClient) -> Self {
        let pending: Arc<Mutex<BTreeMap<String, DynamicObject>>> = Arc::default();
        let wake = Arc::new(Notify::new());
        let resource = ApiResource::erase::<DecisionModule>(&());
        let task = tokio::spawn({
            let (pending, wake) = (pending.clone(), wake.clone());
            async move {
                loop {
                    wake.notified().await;
                    let batch = std::mem::take(&mut *pending.lock().unwrap());
                    let Some(client) = status_client() else {
                        continue;
                    };
                    let api: Api<DynamicObject> = Api::all_with(client, &resource);
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
    pub fn submit(&self, object: &DynamicObject, status: &DecisionModuleStatus) {
        let Some(name) = object.metadata.name.clone() else {
            return;
        };
        let mut wanted = object.clone();
        wanted.data["status"] = serde_json::to_value(status).expect("statuses serialise");
        self.pending.lock().unwrap().insert(name, wanted);
        self.wake.notify_one();
    }
}

impl Drop for StatusWriter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn write(api: &Api<DynamicObject>, name: &str, mut wanted: DynamicObject) {
    for _ in 0..ATTEMPTS {
        match api
            .replace_status(name, &PostParams::default(), &wanted)
            .await
        {
            Ok(_) => return,
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let status_wanted = wanted.data["status"].take();
                match api.get_opt(name).await {
                    Ok(Some(current)) if current.data.get("status") == Some(&status_wanted) => {
                        return;
                    }
                    Ok(Some(current)) => {
                        wanted = current;
                        wanted.data["status"] = status_wanted;
                    }
                    Ok(None) => return,
                    Err(err) => {
                        tracing::warn!(object = name, error = %err, "cannot read the DecisionModule to write its status");
                        return;
                    }
                }
            }
            Err(kube::Error::Api(status)) if status.code == 404 => return,
            Err(err) if rekon_controllers::fence::is_revoked(&err) => {
                tracing::info!(
                    object = name,
                    "DecisionModule status not written: this replica no longer leads"
                );
                return;
            }
            Err(err) => {
                tracing::warn!(object = name, error = %err, "cannot write the DecisionModule status; the next change retries");
                return;
            }
        }
    }
}
