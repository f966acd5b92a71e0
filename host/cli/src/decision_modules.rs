//! `rekon run` serving worlds from `DecisionModule` objects when the API
//! server serves `rekon.dev/v1alpha1` (discovery, as for the DRA API): every
//! replica pulls, verifies and precompiles; only the leader writes statuses.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rekon_modules::Modules;
use rekon_modules::object::{self, Fetcher, ObjectOptions, ServingObjects};
use rekon_oci::{HostPolicy, Puller, PullerOptions};
use rekon_ops::Health;

/// How `run` pulls the modules `DecisionModule` objects name.
#[derive(clap::Args, Debug, Clone)]
pub struct ObjectArgs {
    /// Keep pulled OCI modules here (keyed by digest) [default: `oci` under
    /// --cache-dir; under $TMPDIR with --no-cache].
    #[arg(long, env = "REKON_OCI_CACHE_DIR")]
    pub oci_cache_dir: Option<PathBuf>,
    /// The bound on the OCI cache, in MiB; the least recently used modules go first.
    #[arg(long, default_value_t = 512)]
    pub oci_cache_max_mib: u64,
    /// A registry (`HOST[:PORT]`) that may be reached over plain HTTP;
    /// repeatable. Loopback registries always may. An object's `insecure: true`
    /// is refused (PolicyViolation) for any other registry.
    #[arg(long = "insecure-registry", value_name = "HOST")]
    pub insecure_registries: Vec<String>,
    /// Pull only from these registries (`HOST[:PORT]`, comma-separated);
    /// objects naming another are refused (PolicyViolation).
    #[arg(long, value_name = "HOST[,HOST]", value_delimiter = ',')]
    pub allowed_registries: Option<Vec<String>>,
    /// Refuse (PolicyViolation) every module without a cosign signature that
    /// one of the --verification-key keys verifies, whatever its object names.
    #[arg(long, requires = "verification_keys")]
    pub require_signature: bool,
    /// A cosign public key (ECDSA P-256 PEM) held by the host; repeatable.
    #[arg(
        long = "verification-key",
        value_name = "FILE",
        requires = "require_signature"
    )]
    pub verification_keys: Vec<PathBuf>,
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
/// `cache_dir` is the precompiled cache's directory (`--cache-dir`); the OCI
/// cache lives under it unless `--oci-cache-dir` says otherwise.
pub fn serve(
    modules: Modules,
    client: kube::Client,
    args: &ObjectArgs,
    cache_dir: Option<&Path>,
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
    let oci_cache_dir = match (&args.oci_cache_dir, cache_dir) {
        (Some(dir), _) => dir.clone(),
        (None, Some(dir)) => dir.join("oci"),
        (None, None) => std::env::temp_dir().join("rekon-oci-cache"),
    };
    let verification_keys = args
        .verification_keys
        .iter()
        .map(|path| {
            std::fs::read(path)
                .with_context(|| format!("reading --verification-key {}", path.display()))
        })
        .collect::<anyhow::Result<_>>()?;
    let puller = Puller::new(PullerOptions {
        cache_dir: oci_cache_dir,
        cache_max_bytes: args.oci_cache_max_mib << 20,
        max_bytes,
        extra_ca_pem,
        policy: HostPolicy {
            insecure_registries: args.insecure_registries.clone(),
            allowed_registries: args.allowed_registries.clone(),
            verification_keys,
        },
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
