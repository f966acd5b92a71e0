//! rekon's embedded Kubernetes API server: in memory, real HTTP on loopback, with the
//! semantics of `spec/apiserver-semantics.md`, so the unmodified kube client, kube-runtime
//! watchers and `kubectl` work against it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), rekon_apiserver::Error> {
//! use rekon_apiserver::{ApiServer, ServerConfig};
//! let server = ApiServer::start(ServerConfig::new().seed(1), "127.0.0.1:0".parse().unwrap()).await?;
//! println!("{}", server.kubeconfig_yaml());
//! server.shutdown().await;
//! # Ok(()) }
//! ```

pub mod cluster;
pub mod conversion;
pub mod crd;
pub mod errors;
pub mod faults;
pub mod http;
pub mod meta;
pub mod names;
pub mod owners;
pub mod patch;
pub mod resources;
pub mod selectors;
pub mod store;
pub mod stored;
pub mod verbs;
pub mod watch;
mod yaml;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use cluster::KubeletMode;
pub use errors::ApiError;
pub use faults::{FaultConfig, FaultKind, RequestFault, Verb, WatchFault};
pub use verbs::{
    DeleteOptions, DeleteOutcome, PatchOutcome, Store, StoreError, Target, WriteOptions,
};
pub use yaml::{YamlError, load_yaml_documents};

/// Errors of starting and running the server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot write kubeconfig {path}: {source}")]
    WriteKubeconfig {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Server configuration (builder). Every cluster behaviour is off by default.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    seed: u64,
    history: store::HistoryLimits,
    garbage_collector: bool,
    kubelet: KubeletMode,
    pvc_protection_admission: bool,
    faults: FaultConfig,
    bookmark_interval: Duration,
    too_large_wait: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerConfig {
    pub fn new() -> Self {
        ServerConfig {
            seed: 0,
            history: store::HistoryLimits::default(),
            garbage_collector: false,
            kubelet: KubeletMode::Off,
            pvc_protection_admission: false,
            faults: FaultConfig::default(),
            bookmark_interval: Duration::from_secs(60),
            too_large_wait: Duration::from_millis(500),
        }
    }

    /// Seed of generated names, uids and fault decisions.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// How many events the watch history keeps; older starts get the in-stream 410.
    pub fn history_limit(mut self, events: usize) -> Self {
        self.history.events = events.max(1);
        self
    }

    /// How many bytes (serialized objects) the watch history keeps, 64 MiB by default;
    /// the oldest events are compacted first.
    pub fn history_bytes(mut self, bytes: usize) -> Self {
        self.history.bytes = bytes;
        self
    }

    pub fn garbage_collector(mut self, on: bool) -> Self {
        self.garbage_collector = on;
        self
    }

    pub fn kubelet(mut self, mode: KubeletMode) -> Self {
        self.kubelet = mode;
        self
    }

    /// Upstream's StorageObjectInUseProtection admission plugin (on by default in a real
    /// cluster): a created PVC gets `kubernetes.io/pvc-protection`, a created PV
    /// `kubernetes.io/pv-protection`.
    pub fn pvc_protection_admission(mut self, on: bool) -> Self {
        self.pvc_protection_admission = on;
        self
    }

    pub fn faults(mut self, faults: FaultConfig) -> Self {
        self.faults = faults;
        self
    }

    /// Interval of periodic bookmarks on watches that allow them (default one minute, as
    /// upstream); one is also sent when a watch times out.
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// How long a list or watch at a future resourceVersion waits before the 504.
    pub fn too_large_resource_version_wait(mut self, wait: Duration) -> Self {
        self.too_large_wait = wait;
        self
    }
}

/// A running server.
pub struct ApiServer {
    addr: SocketAddr,
    store: Store,
    shutdown: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    faults: Arc<faults::FaultInjector>,
}

impl ApiServer {
    /// Binds `addr` (port 0 picks a free port) and serves until [`ApiServer::shutdown`].
    pub async fn start(config: ServerConfig, addr: SocketAddr) -> Result<ApiServer, Error> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| Error::Bind { addr, source })?;
        let store = Store::new(verbs::StoreSettings {
            history: config.history,
            seed: config.seed,
            pvc_protection_admission: config.pvc_protection_admission,
        });
        let shutdown = CancellationToken::new();
        let faults = Arc::new(faults::FaultInjector::new(
            config.faults.clone(),
            config.seed,
        ));
        let app = Arc::new(http::App {
            store: store.clone(),
            faults: faults.clone(),
            shutdown: shutdown.clone(),
            server_address: addr.to_string(),
            bookmark_interval: config.bookmark_interval,
            too_large_wait: config.too_large_wait,
        });
        let mut tasks = cluster::spawn(&store, config.garbage_collector, config.kubelet, &shutdown);
        tasks.push(tokio::spawn(crd::cleanup::run(
            store.clone(),
            shutdown.clone(),
        )));
        if let Some(interval) = faults.compaction_interval() {
            tasks.push(tokio::spawn(compact_periodically(
                store.clone(),
                interval,
                shutdown.clone(),
                faults.stopped().clone(),
            )));
        }
        let router = http::router(app);
        let stop = shutdown.clone();
        tasks.push(tokio::spawn(async move {
            let served = axum::serve(listener, router)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await;
            if let Err(err) = served {
                tracing::error!(%err, "embedded API server stopped");
            }
        }));
        tracing::info!(%addr, "embedded API server listening");
        Ok(ApiServer {
            addr,
            store,
            shutdown,
            tasks,
            faults,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig for this server: no auth, context `rekon-embedded`, namespace `default`.
    pub fn kubeconfig_yaml(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: rekon-embedded\n  cluster:\n    server: {url}\ncontexts:\n- name: rekon-embedded\n  context:\n    cluster: rekon-embedded\n    user: rekon-embedded\n    namespace: default\ncurrent-context: rekon-embedded\nusers:\n- name: rekon-embedded\n  user: {{}}\n",
            url = self.url()
        )
    }

    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        std::fs::write(path, self.kubeconfig_yaml()).map_err(|source| Error::WriteKubeconfig {
            path: path.display().to_string(),
            source,
        })
    }

    pub fn store(&self) -> Store {
        self.store.clone()
    }

    /// Stops the faults for good: no more injected answers, the history is
    /// compacted and streams that ran under faults end with 410 Expired, so every
    /// watcher relists (events dropped before cannot be replayed).
    pub fn stop_faults(&self) {
        // Compact first: a client resuming from before now lists again.
        self.store.compact();
        self.faults.stop();
    }

    /// Faults injected so far, by kind.
    pub fn faults_injected(&self) -> std::collections::BTreeMap<&'static str, u64> {
        self.faults.injected()
    }

    /// Stops serving: open watches end, background tasks stop.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

async fn compact_periodically(
    store: Store,
    interval: Duration,
    shutdown: CancellationToken,
    faults_stopped: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => store.compact(),
            _ = shutdown.cancelled() => return,
            _ = faults_stopped.cancelled() => return,
        }
    }
}
