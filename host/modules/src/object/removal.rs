//! A controller module's finalizers once it no longer serves: rekon (the
//! leader) holds [`FINALIZER`] on a controller module's `DecisionModule`;
//! when the object is deleted its controller stops and, with `onRemoval:
//! Release`, the finalizers its module declared are removed from every
//! primary object before rekon lets the object go (`Keep` lets it go at
//! once). A new version that no longer declares a finalizer has the same
//! policy applied to the names it dropped. Every write goes through the
//! leader's fenced client, conditional on the resourceVersion read.

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use rekon_contract::controller::Kind;
use rekon_controllers::generic::serving::ControllerSet;
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::object::resource::DecisionModule;
use crate::object::writer::StatusClient;
use rekon_controllers::generic::release::release;

/// rekon's finalizer on a controller module's `DecisionModule`.
pub const FINALIZER: &str = "rekon.dev/release-finalizers";

/// How long a release waits for the controller that could put the
/// finalizers back to stop.
const STOP_WAIT: Duration = Duration::from_secs(60);

/// Attempts of one finalizer change on a `DecisionModule` (each 409 re-reads it).
const ATTEMPTS: usize = 5;

/// One release: what to remove from where, and whether the object goes after.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The `DecisionModule`'s name and uid.
    pub object: String,
    pub uid: String,
    pub controller: String,
    /// The instance of the controller to wait for (it could add them again).
    pub stopped: Option<u64>,
    pub primary: Kind,
    /// Finalizer names to release (none with `Keep`).
    pub names: Vec<String>,
    /// The object is deleted: rekon's finalizer goes once none remains.
    pub deleting: bool,
}

/// How a release stands, for the object's status.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub object: String,
    pub uid: String,
    /// Primary objects still carrying one of the names, after the last pass.
    pub remaining: Option<u64>,
    /// The last failure, if the last pass failed.
    pub error: Option<String>,
    pub done: bool,
}

struct Running {
    job: Job,
    task: JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The releases in flight, one per object, and rekon's finalizer on the objects.
pub struct Removals {
    client: StatusClient,
    set: ControllerSet,
    retry: Duration,
    running: BTreeMap<String, Running>,
    /// Objects (name, resourceVersion) the finalizer was asked for already.
    holding: BTreeMap<String, String>,
    progress: mpsc::UnboundedSender<Progress>,
}

impl Removals {
    pub fn new(
        client: StatusClient,
        set: ControllerSet,
        retry: Duration,
    ) -> (Self, mpsc::UnboundedReceiver<Progress>) {
        let (progress, received) = mpsc::unbounded_channel();
        let removals = Self {
            client,
            set,
            retry,
            running: BTreeMap::new(),
            holding: BTreeMap::new(),
            progress,
        };
        (removals, received)
    }

    /// Puts rekon's finalizer on `raw` (a controller module's object, not
    /// deleted) if it lacks it and this replica leads.
    pub fn hold(&mut self, raw: &DynamicObject) {
        if raw.finalizers().iter().any(|f| f == FINALIZER) {
            return;
        }
        let (name, version) = (raw.name_any(), raw.resource_version().unwrap_or_default());
        if self.holding.get(&name) == Some(&version) {
            return;
        }
        let Some(client) = (self.client)() else {
            return;
        };
        self.holding.insert(name.clone(), version);
        let uid = raw.uid().unwrap_or_default();
        tokio::spawn(async move {
            if let Err(err) = set_finalizer(&client, &name, &uid, true).await {
                tracing::warn!(object = %name, error = %err, "cannot add rekon's finalizer to the DecisionModule; the next change retries");
            }
        });
    }

    /// Runs `job` unless the same one runs already (a different one replaces it).
    pub fn start(&mut self, job: Job) {
        if self.running.get(&job.object).is_some_and(|r| r.job == job) {
            return;
        }
        let task = tokio::spawn(run(
            job.clone(),
            self.client.clone(),
            self.set.clone(),
            self.retry,
            self.progress.clone(),
        ));
        self.running
            .insert(job.object.clone(), Running { job, task });
    }

    /// Forgets the objects not in `seen` (their releases stop).
    pub fn retain(&mut self, seen: impl Fn(&str) -> bool) {
        self.running.retain(|name, _| seen(name));
        self.holding.retain(|name, _| seen(name));
    }
}

async fn run(
    job: Job,
    client: StatusClient,
    set: ControllerSet,
    retry: Duration,
    progress: mpsc::UnboundedSender<Progress>,
) {
    if let Some(instance) = job.stopped
        && !set.stopped(&job.controller, instance, STOP_WAIT).await
    {
        tracing::warn!(controller = %job.controller, wait = ?STOP_WAIT,
            "the controller module did not stop in time; releasing its finalizers anyway");
    }
    let report = |remaining: Option<u64>, error: Option<String>, done: bool| {
        let _ = progress.send(Progress {
            object: job.object.clone(),
            uid: job.uid.clone(),
            remaining,
            error,
            done,
        });
    };
    let mut remaining = None;
    loop {
        // Only the leader releases; a standby waits for its term.
        let Some(client) = client() else {
            tokio::time::sleep(retry).await;
            continue;
        };
        if !job.names.is_empty() && remaining != Some(0) {
            match release_pass(&client, &job).await {
                Ok(left) => {
                    remaining = Some(left);
                    report(remaining, None, false);
                    if left > 0 {
                        tokio::time::sleep(retry).await;
                        continue;
                    }
                }
                Err((left, err)) => {
                    remaining = left.or(remaining);
                    tracing::warn!(object = %job.object, error = %err, "releasing finalizers failed; retrying");
                    report(remaining, Some(err), false);
                    tokio::time::sleep(retry).await;
                    continue;
                }
            }
        }
        if job.deleting
            && let Err(err) = set_finalizer(&client, &job.object, &job.uid, false).await
        {
            report(remaining, Some(err), false);
            tokio::time::sleep(retry).await;
            continue;
        }
        tracing::info!(object = %job.object, controller = %job.controller, names = ?job.names,
            deleting = job.deleting, "finalizers released");
        report(remaining, None, true);
        return;
    }
}

/// One pass over every primary object; how many still carry a name (also when
/// some could not be released: the error names them).
async fn release_pass(client: &Client, job: &Job) -> Result<u64, (Option<u64>, String)> {
    let resolved = rekon_controllers::generic::resolve(client, &job.primary)
        .await
        .map_err(|err| (None, format!("discovering {}: {err}", job.primary)))?;
    let released = release(client, &resolved.resource, resolved.namespaced, &job.names)
        .await
        .map_err(|err| (err.progress().map(|p| p.remaining as u64), err.to_string()))?;
    Ok(released.remaining as u64)
}

/// Adds (`present`) or removes rekon's finalizer on `DecisionModule` `name`
/// of `uid`, conditional on the resourceVersion read; an object gone (or
/// replaced by another of the same name) needs nothing.
async fn set_finalizer(
    client: &Client,
    name: &str,
    uid: &str,
    present: bool,
) -> Result<(), String> {
    let failed = |err: kube::Error| format!("DecisionModule {name}: {err}");
    let api: Api<DynamicObject> =
        Api::all_with(client.clone(), &ApiResource::erase::<DecisionModule>(&()));
    for _ in 0..ATTEMPTS {
        let Some(object) = api.get_opt(name).await.map_err(failed)? else {
            return Ok(());
        };
        if object.uid().as_deref() != Some(uid) {
            return Ok(());
        }
        let has = object.finalizers().iter().any(|f| f == FINALIZER);
        if has == present || (present && object.metadata.deletion_timestamp.is_some()) {
            return Ok(());
        }
        let mut finalizers: Vec<String> = object
            .finalizers()
            .iter()
            .filter(|f| *f != FINALIZER)
            .cloned()
            .collect();
        if present {
            finalizers.push(FINALIZER.to_string());
        }
        let patch = json!({"metadata": {
            "finalizers": finalizers,
            "resourceVersion": object.resource_version(),
        }});
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(err) => return Err(failed(err)),
        }
    }
    Err(format!(
        "DecisionModule {name}: {ATTEMPTS} conflicting writes in a row"
    ))
}
