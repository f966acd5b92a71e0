//! `rekon run` serving worlds from `DecisionModule` objects when the API
//! server serves `rekon.dev/v1alpha1` (discovery, as for the DRA API): every
//! replica pulls, verifies and precompiles; only the leader writes statuses.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rekon_modules::Modules;
use rekon_modules::object::{self, Fetcher, ObjectOptions, ServingObjects};
use rekon_oci::{Puller, PullerOptions};
use rekon_ops::Health;

/// How `run` pulls the modules `DecisionModule` objects name.
#[derive(clap::Args, Debug, Clone)]
pub struct ObjectArgs {
    /// Keep pulled OCI modules here (keyed by digest) [default: a directory under $TMPDIR].
    #[arg(long, env = "REKON_OCI_CACHE_DIR")]
    pub oci_cache_dir: Option<PathBuf>,
    /// The largest module accepted, in MiB.
    #[arg(long, default_value_t = 64)]
    pub max_module_mib: u64,
    /// Extra CA certificate (PEM) trusted for registries.
    #[arg(long)]
    pub registry_ca: Option<PathBuf>,
    /// Seconds before fetching again after a transient failure (registry unreachable).
    #[arg(long, default_value_t = 10)]
    pub pull_retry_seconds: u64,
}

/// Whether the cluster serves `DecisionModule`s; a failed discovery counts as no.
pub async fn served(client: &kube::Client) -> bool {
    match rekon_controllers::registry::serves(client, object::API).await {
        Ok(true) => {
            tracing::info!(
                api = object::API,
                "serving worlds from DecisionModule objects"
            );
            true
        }
        Ok(false) => {
            tracing::info!(
                api = object::API,
                "the API server does not serve DecisionModule (apply deploy/decisionmodules.yaml); modules come from --guests only"
            );
            false
        }
        Err(err) => {
            tracing::warn!(api = object::API, error = %err, "API discovery failed; modules come from --guests only");
            false
        }
    }
}

/// Starts serving worlds from the objects; statuses are written while
/// `health` says this replica leads.
pub fn serve(
    modules: Modules,
    client: kube::Client,
    args: &ObjectArgs,
    health: Arc<Health>,
) -> anyhow::Result<ServingObjects> {
    let max_bytes = args.max_module_mib << 20;
    let extra_ca_pem = match &args.registry_ca {
        Some(path) => vec![
            std::fs::read(path)
                .with_context(|| format!("reading --registry-ca {}", path.display()))?,
        ],
        None => Vec::new(),
    };
    let puller = Puller::new(PullerOptions {
        cache_dir: args
            .oci_cache_dir
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("rekon-oci-cache")),
        max_bytes,
        extra_ca_pem,
        ..PullerOptions::default()
    })
    .context("starting the OCI puller")?;
    let fetcher = Fetcher::new(client.clone(), max_bytes).with_puller(puller);
    Ok(object::serve(
        modules,
        client,
        fetcher,
        ObjectOptions {
            may_write: Arc::new(move || health.role_name() == "leader"),
            retry: Duration::from_secs(args.pull_retry_seconds.max(1)),
            ..ObjectOptions::default()
        },
    ))
}
