//! `rekon run` serving worlds from `DecisionModule` objects once the API
//! server serves `rekon.dev/v1alpha1` (discovery, asked periodically as for
//! the DRA API): every replica pulls, verifies and precompiles; only the
//! leader writes statuses, through its leadership fence.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rekon_modules::Modules;
use rekon_modules::object::{self, Fetcher, ObjectOptions, ServingObjects, StatusClient};
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

/// Whether the cluster serves `DecisionModule`s now; a failed discovery counts as no.
pub async fn served(client: &kube::Client) -> bool {
    rekon_controllers::selection::serves(client, object::API)
        .await
        .unwrap_or(false)
}

/// The DecisionModule CRD, installed into the embedded API server so that
/// `rekon run --embedded` serves objects from its start.
pub async fn install_crd(client: &kube::Client) -> anyhow::Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::CustomResourceExt;
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    crds.create(&Default::default(), &object::DecisionModule::crd())
        .await
        .context("installing the DecisionModule CRD into the embedded API server")?;
    Ok(())
}

/// The client the leader writes statuses with: the fenced client of the
/// host it runs now (a new one, with a new fence, every term).
#[derive(Clone, Default)]
pub struct LeaderClient(Arc<std::sync::Mutex<Option<kube::Client>>>);

impl LeaderClient {
    pub fn set(&self, client: kube::Client) {
        *self.0.lock().unwrap() = Some(client);
    }

    /// Statuses go out through the term's client while `health` says this replica leads.
    fn status_client(&self, health: Arc<Health>) -> StatusClient {
        let current = self.0.clone();
        Arc::new(move || {
            (health.role_name() == "leader")
                .then(|| current.lock().unwrap().clone())
                .flatten()
        })
    }
}

/// Starts serving worlds from the objects (once discovery shows their API,
/// asked every `discovery`); statuses are written through `leader`.
/// `cache_dir` is the precompiled cache's directory (`--cache-dir`); the OCI
/// cache lives under it unless `--oci-cache-dir` says otherwise.
pub fn serve(
    modules: Modules,
    client: kube::Client,
    args: &ObjectArgs,
    cache_dir: Option<&Path>,
    health: Arc<Health>,
    leader: &LeaderClient,
    discovery: Duration,
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
            retry: Duration::from_secs(args.pull_retry_seconds.max(1)),
            discovery_interval: discovery,
            ..ObjectOptions::new(leader.status_client(health))
        },
    ))
}
