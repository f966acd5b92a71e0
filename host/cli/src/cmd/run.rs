//! `rekon run`: the controllers against a cluster (kubeconfig / in-cluster), or
//! against the embedded API server with `--embedded`; with `/metrics`,
//! `/healthz`, `/readyz`, optional leader election and graceful shutdown.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use kube::Client;
use kube::config::KubeConfigOptions;
use rekon_apiserver::KubeletMode;
use rekon_controllers::builtin;
use rekon_controllers::generic::serving::ControllerSet;
use rekon_controllers::host::{Host, HostConfig};
use rekon_controllers::journal::Journal;
use rekon_controllers::selection::Selection;
use rekon_ops::leader::default_identity;
use rekon_ops::{ElectionConfig, Health, LeaderElector, Metrics, OpsServer, Supervision};
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
    /// Controllers to run, as kube-controller-manager's flag: names, `*` for
    /// all, `-name` to disable one (e.g. `*,-resource-claim`).
    #[arg(long, default_value = "*")]
    controllers: Selection,
    /// Seconds between API discovery checks for controllers whose API the
    /// server does not serve yet.
    #[arg(long, default_value_t = 30)]
    discovery_seconds: u64,
    /// Append the decision journal (JSON lines) to this file. Without it no
    /// journal is kept (a long-running host must not grow with its history).
    #[arg(long)]
    journal: Option<PathBuf>,
    /// Address of /metrics, /healthz and /readyz [default: 0.0.0.0:8080, or
    /// 127.0.0.1:8080 with --embedded].
    #[arg(long)]
    metrics_addr: Option<std::net::SocketAddr>,
    /// Reconcile only while holding a coordination.k8s.io/v1 Lease (run several replicas).
    #[arg(long)]
    leader_elect: bool,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "rekon-controllers")]
    lease_name: String,
    /// Namespace of the leader-election Lease.
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    lease_namespace: String,
    /// How long a standby waits after the leader's last renewal before taking over.
    #[arg(long, default_value_t = 15.0)]
    lease_duration_seconds: f64,
    /// The leader stops reconciling when it could not renew for this long.
    #[arg(long, default_value_t = 10.0)]
    renew_deadline_seconds: f64,
    /// Time between attempts to acquire or renew the Lease.
    #[arg(long, default_value_t = 2.0)]
    retry_period_seconds: f64,
    /// On SIGTERM, reconciles in flight get this long to finish.
    #[arg(long, default_value_t = 10)]
    shutdown_grace_seconds: u64,
    #[command(flatten)]
    modules: crate::guests::ModuleArgs,
    #[command(flatten)]
    objects: crate::decision_modules::ObjectArgs,
    #[command(flatten)]
    api_limit: crate::client_limit::ApiLimitArgs,
}

/// Where `/metrics` listens when `--metrics-addr` is not given.
fn default_metrics_addr(embedded: bool) -> std::net::SocketAddr {
    let ip = if embedded {
        [127, 0, 0, 1]
    } else {
        [0, 0, 0, 0]
    };
    (ip, 8080).into()
}

/// The controller modules to run: those of the guests directory (every
/// `*.wasm` exporting the generic `controller` world; a module that cannot be
/// served is logged with its file and reason, the others run), kept current
/// while rekon runs, and those `DecisionModule` objects bring (`objects`).
/// `--controllers` may name them; a name no module has is an error unless
/// objects may still bring it.
fn controller_modules(
    modules: &rekon_modules::Modules,
    selection: &Selection,
    objects: bool,
) -> anyhow::Result<ControllerSet> {
    let set = modules.controller_set();
    let names: Vec<String> = set.modules().iter().map(|m| m.name().to_string()).collect();
    match selection.check_known(names.iter().map(String::as_str)) {
        Err(err) if objects => tracing::warn!(error = %err,
            "--controllers names a controller no module serves yet; a DecisionModule may bring it"),
        Err(err) => return Err(err.into()),
        Ok(()) => {}
    }
    Ok(set)
}

fn seconds(flag: &str, value: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(value)
        .with_context(|| format!("--{flag}: {value} is not a duration in seconds"))
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let metrics = Arc::new(Metrics::new());
    let health = Arc::new(Health::new());
    let metrics_addr = args
        .metrics_addr
        .unwrap_or_else(|| default_metrics_addr(args.embedded));
    let ops = OpsServer::start(metrics_addr, metrics.clone(), health.clone()).await?;
    tracing::info!(addr = %ops.local_addr(), "serving /metrics, /healthz and /readyz");

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
        crate::decision_modules::install_crd(&client).await?;
        embedded = Some(cluster);
        client
    } else {
        external_client(
            args.kubeconfig.as_deref(),
            args.context.as_deref(),
            &args.api_limit,
        )
        .await?
    };
    // Modules are served (and hot-swapped) from here on; swaps and shadow
    // verdicts feed rekon_guest_info and rekon_shadow_decisions.
    // Without --guests every module comes from objects, whenever their CRD
    // appears; with it, objects may bring modules the directory lacks.
    let objects = args.guests.is_none() || crate::decision_modules::served(&client).await;
    let (deciders, _watching, modules) = crate::guests::serve(
        args.guests.as_deref(),
        &args.modules,
        client.clone(),
        metrics.clone(),
        objects,
    )
    .await?;
    let controller_modules = controller_modules(&modules, &args.controllers, objects)?;
    let leader = crate::decision_modules::LeaderClient::default();
    let cache_dir = args.modules.cache.dir()?;
    let _objects = crate::decision_modules::serve(
        modules,
        client.clone(),
        &args.objects,
        cache_dir.as_deref(),
        health.clone(),
        &leader,
        Duration::from_secs(args.discovery_seconds.max(1)),
    )?;
    health.set_deciders(deciders.clone());
    health.set_guests_loaded(true);
    let journal = Arc::new(match &args.journal {
        Some(path) => Journal::to_sink(Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening journal {}", path.display()))?,
        )),
        None => Journal::disabled(),
    });
    for controller in builtin::names() {
        metrics.register_controller(controller);
    }
    for module in controller_modules.modules() {
        metrics.register_controller(module.name());
    }
    let start_host = {
        let (client, metrics) = (client.clone(), metrics.clone());
        move || {
            let host = Host::start(
                client.clone(),
                HostConfig {
                    workers: args.workers,
                    controllers: args.controllers.clone(),
                    discovery_interval: Duration::from_secs(args.discovery_seconds.max(1)),
                    modules: controller_modules.clone(),
                    ..HostConfig::new(deciders.clone(), journal.clone(), metrics.clone())
                },
            );
            // DecisionModule statuses go out through this term's fence.
            leader.set(host.ctx.client.clone());
            host
        }
    };
    let supervision = Supervision {
        metrics: metrics.clone(),
        health: health.clone(),
        shutdown_grace: Duration::from_secs(args.shutdown_grace_seconds),
    };
    let elector = if args.leader_elect {
        let config = ElectionConfig {
            lease_duration: seconds("lease-duration-seconds", args.lease_duration_seconds)?,
            renew_deadline: seconds("renew-deadline-seconds", args.renew_deadline_seconds)?,
            retry_period: seconds("retry-period-seconds", args.retry_period_seconds)?,
            ..ElectionConfig::new(&args.lease_name, &args.lease_namespace, default_identity())
        };
        config.check_shutdown_grace(supervision.shutdown_grace)?;
        tracing::info!(lease = %args.lease_name, namespace = %args.lease_namespace, identity = %config.identity,
            "leader election on");
        Some(LeaderElector::new(client.clone(), config)?)
    } else {
        None
    };
    if args.demo {
        anyhow::ensure!(args.embedded, "--demo needs --embedded");
        // Before the controllers start, so their first list holds the template.
        crate::demo::prepare(&client).await?;
        let demo_client = client.clone();
        tokio::spawn(async move {
            if let Err(err) = crate::demo::run(demo_client).await {
                tracing::error!(error = %err, "demo failed");
            }
        });
    }
    match elector {
        Some(elector) => {
            supervision
                .run_elected(elector, start_host, shutdown_signal())
                .await
        }
        None => supervision.run(start_host, shutdown_signal()).await,
    }
    ops.stop().await;
    if let Some(cluster) = embedded {
        cluster.server.shutdown().await;
    }
    Ok(ExitCode::SUCCESS)
}

async fn external_client(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
    api_limit: &crate::client_limit::ApiLimitArgs,
) -> anyhow::Result<Client> {
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
    Ok(api_limit.client(config)?)
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
