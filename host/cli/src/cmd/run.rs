//! `rekon run`: the controllers against a cluster (kubeconfig / in-cluster), or
//! against the embedded API server with `--embedded`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use kube::Client;
use kube::config::KubeConfigOptions;
use rekon_apiserver::KubeletMode;
use rekon_controllers::host::{Host, HostConfig};
use rekon_controllers::journal::Journal;
use rekon_controllers::observe::NoObserver;
use rekon_machinery::queue::QueueConfig;
use rekon_simulate::{ClusterOptions, EmbeddedCluster};

#[derive(clap::Args)]
pub struct Args {
    /// Directory with the guest modules (guests.yaml or the built *.wasm).
    #[arg(long, env = "REKON_GUEST_DIR")]
    guests: Option<PathBuf>,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use.
    #[arg(long)]
    context: Option<String>,
    /// Start the embedded API server and run against it.
    #[arg(long)]
    embedded: bool,
    /// Where `--embedded` writes the kubeconfig for kubectl.
    #[arg(long, default_value = "rekon-embedded.kubeconfig")]
    write_kubeconfig: PathBuf,
    /// Listen address of the embedded API server.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: std::net::SocketAddr,
    /// With --embedded: create a small demo workload and walk it through its life.
    #[arg(long)]
    demo: bool,
    /// Workers per controller.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Append the decision journal (JSON lines) to this file.
    #[arg(long)]
    journal: Option<PathBuf>,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let deciders = crate::guests::load_deciders(args.guests.as_deref())?;
    let mut embedded = None;
    let client = if args.embedded {
        let cluster = EmbeddedCluster::start_at(
            &ClusterOptions {
                kubelet: KubeletMode::Delay(Duration::from_secs(2)),
                ..ClusterOptions::default()
            },
            args.listen,
        )
        .await?;
        cluster
            .server
            .write_kubeconfig(&args.write_kubeconfig)
            .with_context(|| format!("writing {}", args.write_kubeconfig.display()))?;
        tracing::info!(
            url = %cluster.server.url(),
            kubeconfig = %args.write_kubeconfig.display(),
            "embedded API server ready: kubectl --kubeconfig {} get pods,pvc,resourceclaims -A",
            args.write_kubeconfig.display()
        );
        let client = cluster.client.clone();
        embedded = Some(cluster);
        client
    } else {
        external_client(args.kubeconfig.as_deref(), args.context.as_deref()).await?
    };
    let journal = Arc::new(match &args.journal {
        Some(path) => Journal::with_sink(Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening journal {}", path.display()))?,
        )),
        None => Journal::new(),
    });
    let host = Host::start(
        client.clone(),
        HostConfig {
            workers: args.workers,
            pvc_decider: deciders.pvc,
            claim_decider: deciders.claim,
            journal,
            queue: QueueConfig::default(),
            observer: Arc::new(NoObserver),
        },
    );
    if args.demo {
        anyhow::ensure!(args.embedded, "--demo needs --embedded");
        let demo_client = client.clone();
        tokio::spawn(async move {
            if let Err(err) = crate::demo::run(demo_client).await {
                tracing::error!(error = %err, "demo failed");
            }
        });
    }
    shutdown_signal().await;
    tracing::info!("shutting down: finishing reconciles in flight");
    host.shutdown(Duration::from_secs(10)).await;
    if let Some(cluster) = embedded {
        cluster.server.shutdown().await;
    }
    Ok(ExitCode::SUCCESS)
}

async fn external_client(kubeconfig: Option<&std::path::Path>, context: Option<&str>) -> anyhow::Result<Client> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &options).await?
        }
        None if context.is_some() => kube::Config::from_kubeconfig(&options).await?,
        None => kube::Config::infer().await?,
    };
    Ok(Client::try_from(config)?)
}

/// Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
