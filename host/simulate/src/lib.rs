//! `rekon simulate` as a library: start the embedded API server with the given
//! state, run the controllers until they go idle, apply each scripted step and let
//! them settle again, and report the final objects and the journal.

mod steps;
pub mod workload;

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use rekon_apiserver::stored::Stored;
use rekon_apiserver::{ApiServer, FaultConfig, KubeletMode, ServerConfig};
use rekon_controllers::generic::ControllerModule;
use rekon_controllers::host::{Host, HostConfig, NotConverged};
use rekon_controllers::journal::Journal;
use rekon_controllers::observe::NoObserver;
use rekon_controllers::selection::Selection;

pub use rekon_controllers::decider::Deciders;
use serde_json::Value;

pub use steps::{DeleteStep, ObjectRef, PatchStep, PatchType, Step, parse_steps};

#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    #[error("embedded API server: {0}")]
    Server(String),
    #[error("kube client for the embedded API server: {0}")]
    Client(String),
    #[error("state: {0}")]
    State(String),
    #[error("step {index} ({step}): {message}")]
    Step {
        index: usize,
        step: String,
        message: String,
    },
}

/// The cluster the simulation runs in.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    pub seed: u64,
    pub garbage_collector: bool,
    pub kubelet: KubeletMode,
    pub pvc_protection_admission: bool,
    pub faults: Option<FaultConfig>,
    /// Which controllers run (`--controllers`).
    pub controllers: Selection,
    /// Controller modules that run beside the built-in controllers.
    pub modules: Vec<ControllerModule>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        Self {
            seed: 0,
            garbage_collector: true,
            kubelet: KubeletMode::Instant,
            pvc_protection_admission: true,
            faults: None,
            controllers: Selection::default(),
            modules: Vec::new(),
        }
    }
}

/// When the controllers count as idle, and how long they may take.
#[derive(Debug, Clone)]
pub struct Settle {
    /// Nothing happened for this long.
    pub quiet: Duration,
    /// No requeue is due within this bound.
    pub requeue_bound: Duration,
    /// Give up (not converged) after this long, per phase.
    pub timeout: Duration,
}

impl Default for Settle {
    fn default() -> Self {
        Self {
            quiet: Duration::from_millis(300),
            requeue_bound: Duration::from_secs(2),
            timeout: Duration::from_secs(60),
        }
    }
}

/// What a simulation ends with.
pub struct Report {
    /// Every object, sorted by apiVersion, kind, namespace, name; managedFields dropped.
    pub objects: Vec<Value>,
    pub journal: Arc<Journal>,
    /// `Err` names the keys that did not converge.
    pub converged: Result<(), NotConverged>,
}

/// An embedded API server and a client for it.
pub struct EmbeddedCluster {
    pub server: ApiServer,
    pub client: Client,
}

impl EmbeddedCluster {
    pub async fn start(options: &ClusterOptions) -> Result<Self, SimulateError> {
        Self::start_at(options, "127.0.0.1:0".parse().expect("loopback address")).await
    }

    /// Like [`Self::start`], listening on `addr`.
    pub async fn start_at(
        options: &ClusterOptions,
        addr: std::net::SocketAddr,
    ) -> Result<Self, SimulateError> {
        let mut config = ServerConfig::new()
            .seed(options.seed)
            .garbage_collector(options.garbage_collector)
            .kubelet(options.kubelet)
            .pvc_protection_admission(options.pvc_protection_admission);
        if let Some(faults) = &options.faults {
            config = config.faults(faults.clone());
        }
        let server = ApiServer::start(config, addr)
            .await
            .map_err(|e| SimulateError::Server(e.to_string()))?;
        let client = client_for(&server.kubeconfig_yaml()).await?;
        Ok(Self { server, client })
    }

    /// Every object, sorted, without managedFields.
    pub fn objects(&self) -> Vec<Value> {
        let mut objects = Vec::new();
        self.each_object(|obj| objects.push(obj));
        objects
    }

    /// Hands every object, sorted, without managedFields, to `each` one at a time. Only
    /// the stored text is held (shared with the store): a JSON tree costs several times
    /// its text, and 60,000 of them at once were the peak of a large simulation.
    pub fn each_object(&self, mut each: impl FnMut(Value)) {
        let mut all: Vec<(String, &str, String, String, Stored)> =
            self.server.store().read(|objs| {
                objs.iter_all()
                    .map(|(key, obj)| {
                        let info = key.resource.info();
                        let (namespace, name) = (key.namespace.clone(), key.name.clone());
                        (info.api_version(), info.kind, namespace, name, obj.clone())
                    })
                    .collect()
            });
        all.sort_by(|a, b| (&a.0, a.1, &a.2, &a.3).cmp(&(&b.0, b.1, &b.2, &b.3)));
        for (.., stored) in all {
            let mut obj = stored.decode();
            if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
            each(obj);
        }
    }
}

/// A kube client for a kubeconfig given as YAML text.
pub async fn client_for(kubeconfig_yaml: &str) -> Result<Client, SimulateError> {
    let kubeconfig =
        Kubeconfig::from_yaml(kubeconfig_yaml).map_err(|e| SimulateError::Client(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| SimulateError::Client(e.to_string()))?;
    Client::try_from(config).map_err(|e| SimulateError::Client(e.to_string()))
}

/// Host settings for simulations: a few workers, discovery asked often.
pub fn host_config(deciders: &Deciders, journal: Arc<Journal>) -> HostConfig {
    HostConfig {
        discovery_interval: Duration::from_secs(1),
        ..HostConfig::new(deciders.clone(), journal, Arc::new(NoObserver))
    }
}

/// Objects loaded per `load_objects` call: the prepared JSON trees of one chunk are
/// all that is held besides the store's text.
const LOAD_CHUNK: usize = 1024;

/// The objects a simulation starts from.
pub enum State {
    /// Objects read from state files. Loaded in one call when they define custom
    /// resources, which puts the definitions before the objects they define.
    Objects(Vec<Value>),
    /// Objects made as they are loaded (a generated workload, which defines no custom
    /// resources): only one chunk of them is ever held.
    Generated(Box<dyn Iterator<Item = Value> + Send>),
}

impl From<Vec<Value>> for State {
    fn from(objects: Vec<Value>) -> Self {
        State::Objects(objects)
    }
}

/// Loads `state` into the store, in chunks unless it defines custom resources.
fn load(cluster: &EmbeddedCluster, state: State) -> Result<(), SimulateError> {
    let store = cluster.server.store();
    let load = |objs| {
        store
            .load_objects(objs)
            .map_err(|e| SimulateError::State(e.to_string()))
    };
    let mut objs: Box<dyn Iterator<Item = Value> + Send> = match state {
        State::Objects(objs) if objs.iter().any(|o| o["kind"] == "CustomResourceDefinition") => {
            return load(objs);
        }
        State::Objects(objs) => Box::new(objs.into_iter()),
        State::Generated(objs) => objs,
    };
    loop {
        let chunk: Vec<Value> = objs.by_ref().take(LOAD_CHUNK).collect();
        if chunk.is_empty() {
            return Ok(());
        }
        load(chunk)?;
    }
}

/// Runs a whole simulation.
pub async fn simulate(
    state: impl Into<State>,
    steps: Vec<Step>,
    options: ClusterOptions,
    settle: Settle,
    deciders: Deciders,
    journal: Arc<Journal>,
) -> Result<Report, SimulateError> {
    let mut objects = Vec::new();
    let outcome = simulate_each(state, steps, options, settle, deciders, journal, |obj| {
        objects.push(obj)
    })
    .await?;
    Ok(Report {
        objects,
        journal: outcome.journal,
        converged: outcome.converged,
    })
}

/// What [`simulate_each`] ends with besides the objects it handed out.
pub struct Outcome {
    pub journal: Arc<Journal>,
    /// `Err` names the keys that did not converge.
    pub converged: Result<(), NotConverged>,
}

/// [`simulate`], handing the final objects (sorted, without managedFields) to `each`
/// one at a time instead of holding them all.
pub async fn simulate_each(
    state: impl Into<State>,
    steps: Vec<Step>,
    options: ClusterOptions,
    settle: Settle,
    deciders: Deciders,
    journal: Arc<Journal>,
    each: impl FnMut(Value),
) -> Result<Outcome, SimulateError> {
    let cluster = EmbeddedCluster::start(&options).await?;
    load(&cluster, state.into())?;
    let host = Host::start(
        cluster.client.clone(),
        HostConfig {
            controllers: options.controllers.clone(),
            modules: options.modules.clone().into(),
            ..host_config(&deciders, journal.clone())
        },
    );
    let mut converged = host
        .wait_idle(settle.quiet, settle.requeue_bound, settle.timeout)
        .await;
    for (index, step) in steps.iter().enumerate() {
        if converged.is_err() {
            break;
        }
        step.apply(&cluster.client)
            .await
            .map_err(|message| SimulateError::Step {
                index,
                step: step.describe(),
                message,
            })?;
        host.touch();
        converged = host
            .wait_idle(settle.quiet, settle.requeue_bound, settle.timeout)
            .await;
    }
    host.shutdown(Duration::from_secs(5)).await;
    cluster.each_object(each);
    cluster.server.shutdown().await;
    Ok(Outcome { journal, converged })
}
