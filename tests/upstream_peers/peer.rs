//! The two sides of a comparison (kube-controller-manager v1.20.2 through
//! `real-controller-manager`, or rekon's host in process serving one module),
//! the harness's own writes, and what the real server counted of everyone's.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Resource};
use rekon_controllers::host::{Host, HostConfig};
use rekon_controllers::journal::{Entry, Journal};
use rekon_simulate::Deciders;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The label every object of a run carries (value: the run's name prefix).
pub const RUN_LABEL: &str = "rekon-peers";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Kcm,
    Rekon,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Kcm => "kube-controller-manager",
            Side::Rekon => "rekon",
        })
    }
}

/// One controller, as both sides name and run it.
pub struct Peer {
    /// `--controllers` of both.
    pub name: &'static str,
    /// kube-controller-manager flags besides `--controllers`.
    pub kcm_flags: &'static [&'static str],
    /// The module's file stem in the guests directory (`make guests`).
    pub module: &'static str,
}

/// The real server, the controller-manager tool, and where logs go.
pub struct Env {
    pub kubeconfig: PathBuf,
    pub client: Client,
    pub kcm_tool: PathBuf,
    pub logs: tempfile::TempDir,
    /// Distinguishes this invocation's objects from any other's on the server.
    pub run_id: String,
}

impl Env {
    /// The name prefix of one side's objects.
    pub fn prefix(&self, peer: &Peer, side: Side) -> String {
        let side = match side {
            Side::Kcm => "kcm",
            Side::Rekon => "rekon",
        };
        format!("peers-{}-{side}-{}", self.run_id, peer.name)
    }
}

pub async fn client_for(kubeconfig: &Path) -> anyhow::Result<Client> {
    let kc = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

/// A controller started for one side; stopped by [`Running::stop`] (or on drop).
pub enum Running {
    Kcm(KcmProcess),
    Rekon { host: Host, journal: Arc<Journal> },
}

/// kube-controller-manager started by the tool; killed on drop if still running.
pub struct KcmProcess {
    pid: u32,
    pub log: PathBuf,
    stopped: bool,
}

impl Drop for KcmProcess {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = std::process::Command::new("kill")
                .arg(self.pid.to_string())
                .status();
        }
    }
}

impl KcmProcess {
    /// Whether the process is gone (a zombie nobody reaps counts as gone).
    fn exited(&self) -> bool {
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z')),
        }
    }

    /// The last lines of its log, for a failure message.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }
}

impl Running {
    pub async fn start(side: Side, peer: &Peer, env: &Env) -> anyhow::Result<Running> {
        match side {
            Side::Kcm => {
                let log = env.logs.path().join(format!("kcm-{}.log", peer.name));
                let out = tokio::process::Command::new(&env.kcm_tool)
                    .arg("start")
                    .arg("--kubeconfig")
                    .arg(&env.kubeconfig)
                    .arg("--log")
                    .arg(&log)
                    .arg("--")
                    .arg(format!("--controllers={}", peer.name))
                    .args(peer.kcm_flags)
                    .output()
                    .await
                    .with_context(|| format!("running {}", env.kcm_tool.display()))?;
                anyhow::ensure!(
                    out.status.success(),
                    "{} start failed: {}",
                    env.kcm_tool.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
                let pid = String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .find_map(|l| l.strip_prefix("pid: ").and_then(|p| p.trim().parse().ok()))
                    .with_context(|| format!("{} start printed no pid", env.kcm_tool.display()))?;
                Ok(Running::Kcm(KcmProcess {
                    pid,
                    log,
                    stopped: false,
                }))
            }
            Side::Rekon => {
                let journal = Arc::new(Journal::new());
                let config = HostConfig {
                    controllers: peer.name.parse()?,
                    modules: vec![rekon_tests::sim::controller_module(peer.module)].into(),
                    ..rekon_simulate::host_config(&Deciders::new(), journal.clone())
                };
                let host = Host::start(client_for(&env.kubeconfig).await?, config);
                Ok(Running::Rekon { host, journal })
            }
        }
    }

    /// Why a wait for this controller failed: kube-controller-manager's log tail.
    pub fn explain(&self) -> String {
        match self {
            Running::Kcm(process) => format!(
                "kube-controller-manager log ({}):\n{}",
                process.log.display(),
                process.log_tail()
            ),
            Running::Rekon { .. } => "rekon's host runs in this process".into(),
        }
    }

    /// Stops it and waits until it is gone; rekon's journal for rekon.
    pub async fn stop(self, env: &Env) -> anyhow::Result<Option<Arc<Journal>>> {
        match self {
            Running::Kcm(mut process) => {
                let status = tokio::process::Command::new(&env.kcm_tool)
                    .args(["stop", &process.pid.to_string()])
                    .status()
                    .await?;
                anyhow::ensure!(
                    status.success(),
                    "stopping kube-controller-manager: {status}"
                );
                let stopped =
                    poll_until(Duration::from_secs(20), Duration::from_millis(100), || {
                        let gone = process.exited();
                        async move { gone }
                    })
                    .await;
                anyhow::ensure!(
                    stopped,
                    "kube-controller-manager {} did not exit",
                    process.pid
                );
                process.stopped = true;
                Ok(None)
            }
            Running::Rekon { host, journal } => {
                host.shutdown(Duration::from_secs(5)).await;
                Ok(Some(journal))
            }
        }
    }
}

/// Calls `check` every `every` until it answers true; false after `timeout`.
pub async fn poll_until<F, Fut>(timeout: Duration, every: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(every).await;
    }
}

/// The harness's client: counts its own writes, so the server's counts can be
/// split into the harness's and the controller's.
pub struct Harness {
    pub client: Client,
    writes: AtomicU64,
}

impl Harness {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            writes: AtomicU64::new(0),
        }
    }

    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    fn wrote(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }

    pub async fn create<K>(&self, api: &Api<K>, object: Value) -> anyhow::Result<K>
    where
        K: Resource + Clone + DeserializeOwned + Serialize + fmt::Debug,
    {
        let object: K = serde_json::from_value(object)?;
        self.wrote();
        let name = object.meta().name.clone().unwrap_or_default();
        api.create(&PostParams::default(), &object)
            .await
            .with_context(|| format!("creating {name}"))
    }

    /// A JSON merge patch of the object, or of its status.
    pub async fn merge<K>(
        &self,
        api: &Api<K>,
        name: &str,
        status: bool,
        patch: Value,
    ) -> anyhow::Result<K>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug,
    {
        self.wrote();
        let params = PatchParams::default();
        let patch = Patch::Merge(&patch);
        if status {
            api.patch_status(name, &params, &patch).await
        } else {
            api.patch(name, &params, &patch).await
        }
        .with_context(|| format!("patching {name}{}", if status { "/status" } else { "" }))
    }

    pub async fn delete<K>(&self, api: &Api<K>, name: &str) -> anyhow::Result<()>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug,
    {
        self.wrote();
        // Background: batch/v1 Jobs default to orphaning, which needs a garbage collector.
        api.delete(name, &DeleteParams::background())
            .await
            .with_context(|| format!("deleting {name}"))?;
        Ok(())
    }

    /// Removes every finalizer of the objects labelled for `prefix` and deletes
    /// them, waiting until they are gone (the server has no garbage collector).
    pub async fn clean_up<K>(&self, api: &Api<K>, prefix: &str) -> anyhow::Result<()>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug,
    {
        let selector = kube::api::ListParams::default().labels(&format!("{RUN_LABEL}={prefix}"));
        for object in api.list(&selector).await? {
            let meta = object.meta();
            let name = meta.name.clone().unwrap_or_default();
            if !meta.finalizers.clone().unwrap_or_default().is_empty() {
                self.merge(api, &name, false, json!({"metadata": {"finalizers": null}}))
                    .await?;
            }
            if meta.deletion_timestamp.is_none() {
                match self.delete(api, &name).await {
                    Err(e) if is_not_found(&e) => {}
                    other => other?,
                }
            }
        }
        let selector = &selector;
        let gone = poll_until(
            Duration::from_secs(20),
            Duration::from_millis(200),
            move || async move { api.list(selector).await.is_ok_and(|l| l.items.is_empty()) },
        )
        .await;
        anyhow::ensure!(
            gone,
            "objects labelled {RUN_LABEL}={prefix} are still there"
        );
        Ok(())
    }
}

fn is_not_found(e: &anyhow::Error) -> bool {
    matches!(e.downcast_ref::<kube::Error>(), Some(kube::Error::Api(s)) if s.code == 404)
}

/// Where an object ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Gone,
    Present {
        deleting: bool,
        finalizers: Vec<String>,
    },
}

impl State {
    pub fn of(meta: Option<&ObjectMeta>) -> State {
        match meta {
            None => State::Gone,
            Some(meta) => State::Present {
                deleting: meta.deletion_timestamp.is_some(),
                finalizers: meta.finalizers.clone().unwrap_or_default(),
            },
        }
    }

    pub fn kept(finalizers: &[&str]) -> State {
        State::Present {
            deleting: false,
            finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
        }
    }

    pub fn deleting(finalizers: &[&str]) -> State {
        State::Present {
            deleting: true,
            finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            State::Gone => f.write_str("gone"),
            State::Present {
                deleting,
                finalizers,
            } => write!(
                f,
                "{} [{}]",
                if *deleting { "deleting" } else { "kept" },
                finalizers.join(",")
            ),
        }
    }
}

/// One object of a scenario: what upstream's behaviour predicts and what happened.
pub struct Case {
    pub name: &'static str,
    pub expected: State,
    pub observed: State,
    /// Timing or other detail worth printing.
    pub note: String,
}

/// Requests the controller made on the scenario's resource.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Requests {
    pub writes: u64,
    /// Single-object GETs (fresh reads).
    pub gets: u64,
}

/// What one side did in one scenario.
pub struct Run {
    pub side: Side,
    pub cases: Vec<Case>,
    /// Broken expectations that are not an end state (timing).
    pub problems: Vec<String>,
    /// The server's counts for the resource, the harness's own writes taken out.
    pub server: Requests,
    /// rekon's journal, on the scenario's objects only.
    pub journal: Option<Requests>,
}

/// `apiserver_request_total` of one resource (every subresource), by verb.
pub async fn server_counts(
    client: &Client,
    resource: &str,
) -> anyhow::Result<BTreeMap<String, u64>> {
    let text = client
        .request_text(http::Request::get("/metrics").body(Vec::new())?)
        .await
        .context("GET /metrics")?;
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let Some((labels, value)) = line
            .strip_prefix("apiserver_request_total{")
            .and_then(|rest| rest.rsplit_once("} "))
        else {
            continue;
        };
        let label = |key: &str| {
            labels
                .split(',')
                .find_map(|l| l.strip_prefix(key)?.strip_prefix("=\""))
                .map(|v| v.trim_end_matches('"').to_string())
        };
        if label("resource").as_deref() != Some(resource) {
            continue;
        }
        let verb = label("verb").unwrap_or_default();
        *counts.entry(verb).or_default() += value.trim().parse::<f64>().unwrap_or(0.0) as u64;
    }
    Ok(counts)
}

/// The controller's requests between two [`server_counts`], the harness's writes taken out.
pub fn controller_requests(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    harness_writes: u64,
) -> Requests {
    let delta =
        |verb: &str| after.get(verb).copied().unwrap_or(0) - before.get(verb).copied().unwrap_or(0);
    let writes: u64 = [
        "POST",
        "PUT",
        "PATCH",
        "DELETE",
        "DELETECOLLECTION",
        "APPLY",
    ]
    .iter()
    .map(|v| delta(v))
    .sum();
    Requests {
        writes: writes.saturating_sub(harness_writes),
        gets: delta("GET"),
    }
}

/// rekon's requests on the objects named `prefix-CASE` (not the canary).
pub fn journal_requests(journal: &Journal, prefix: &str, canary: &str) -> Requests {
    let mut requests = Requests::default();
    for entry in journal.entries() {
        let Entry::Write { verb, name, .. } = entry else {
            continue;
        };
        if !name.starts_with(prefix) || name == canary {
            continue;
        }
        match verb.as_str() {
            "get" => requests.gets += 1,
            "list" => {}
            _ => requests.writes += 1,
        }
    }
    requests
}
