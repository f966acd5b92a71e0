//! rekon processes for the campaign. Each runs on its own tokio runtime, so a
//! crash is real: the runtime is torn down and every task dies where it stands,
//! mid-reconcile and mid-request, without a graceful shutdown.

use std::sync::Arc;
use std::time::Duration;

use rekon_controllers::host::{Host, NotConverged};
use rekon_controllers::journal::Journal;
use rekon_ops::{ElectionConfig, Health, LeaderElector, Metrics, Supervision};
use rekon_simulate::{Deciders, client_for, host_config};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::guests::share;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a replica runtime")
}

/// A client living on `rt` (its connection tasks die with it).
async fn client_on(rt: &Runtime, kubeconfig: &str) -> kube::Client {
    let kubeconfig = kubeconfig.to_string();
    rt.spawn(async move { client_for(&kubeconfig).await })
        .await
        .expect("client task")
        .expect("client for the embedded server")
}

enum Role {
    /// A host without election.
    Plain(Host),
    /// A supervisor campaigning for the lease.
    Elected {
        health: Arc<Health>,
        stop: oneshot::Sender<()>,
        task: JoinHandle<()>,
    },
}

pub struct Replica {
    rt: Runtime,
    role: Role,
}

impl Replica {
    pub async fn plain(kubeconfig: &str, deciders: &Deciders, journal: Arc<Journal>) -> Self {
        let rt = runtime();
        let client = client_on(&rt, kubeconfig).await;
        let host = {
            let _inside = rt.enter();
            Host::start(client, host_config(deciders, journal))
        };
        Self {
            rt,
            role: Role::Plain(host),
        }
    }

    pub async fn elected(
        kubeconfig: &str,
        lease: &str,
        identity: &str,
        deciders: &Deciders,
        journal: Arc<Journal>,
    ) -> Self {
        let rt = runtime();
        let client = client_on(&rt, kubeconfig).await;
        let health = Arc::new(Health::new());
        health.set_guests_loaded(true);
        let supervision = Supervision {
            metrics: Arc::new(Metrics::new()),
            health: health.clone(),
            shutdown_grace: Duration::from_secs(2),
        };
        let election = ElectionConfig {
            lease_duration: Duration::from_millis(1200),
            renew_deadline: Duration::from_millis(800),
            retry_period: Duration::from_millis(200),
            ..ElectionConfig::new(lease, "default", identity)
        };
        let elector = LeaderElector::new(client.clone(), election).expect("election config");
        let deciders = share(deciders);
        let start = move || Host::start(client.clone(), host_config(&deciders, journal.clone()));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = rt.spawn(async move {
            supervision
                .run_elected(elector, start, async { stopped.await.unwrap_or(()) })
                .await;
        });
        Self {
            rt,
            role: Role::Elected { health, stop, task },
        }
    }

    pub fn leads(&self) -> bool {
        match &self.role {
            Role::Plain(_) => true,
            Role::Elected { health, .. } => health.role_name() == "leader",
        }
    }

    /// Waits until the host is idle (plain hosts only; an elected host's
    /// convergence is judged from the objects alone).
    pub async fn wait_idle(&self, timeout: Duration) -> Result<(), NotConverged> {
        match &self.role {
            Role::Plain(host) => {
                host.touch();
                host.wait_idle(Duration::from_millis(300), Duration::from_secs(1), timeout)
                    .await
            }
            Role::Elected { .. } => Ok(()),
        }
    }

    /// The process dies: no shutdown, no lease release, requests cut off.
    pub fn crash(self) {
        self.rt.shutdown_background();
    }

    /// A graceful stop (SIGTERM).
    pub async fn stop(self) {
        match self.role {
            Role::Plain(host) => {
                let stopping = self.rt.spawn(host.shutdown(Duration::from_secs(2)));
                let _ = stopping.await;
            }
            Role::Elected { stop, task, .. } => {
                let _ = stop.send(());
                let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
            }
        }
        self.rt.shutdown_background();
    }
}
