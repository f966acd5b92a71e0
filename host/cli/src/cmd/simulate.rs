//! `rekon simulate`: the what-if tool. Runs the controllers against the embedded
//! API server seeded with a state file, applies a script, prints the final state.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rekon_apiserver::{FaultConfig, KubeletMode};
use rekon_controllers::journal::Journal;
use rekon_simulate::{ClusterOptions, Settle, parse_steps, simulate};

#[derive(clap::Args)]
pub struct Args {
    /// Multi-document YAML (or a List) of the objects to start from.
    #[arg(long)]
    state: PathBuf,
    /// YAML list of steps (create/update/delete/patch), each applied after the controllers went idle.
    #[arg(long)]
    script: Option<PathBuf>,
    /// Directory with the guest modules (guests.yaml or the built *.wasm).
    #[arg(long, env = "REKON_GUEST_DIR")]
    guests: Option<PathBuf>,
    /// Seed for generated names and fault injection.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write the final objects here (YAML) instead of stdout.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Write the decision journal here (one JSON line per decision and per API write).
    #[arg(long)]
    journal: Option<PathBuf>,
    /// Fault injection configuration for the embedded API server (YAML/JSON).
    #[arg(long)]
    faults: Option<PathBuf>,
    /// Run without the garbage collector.
    #[arg(long)]
    no_gc: bool,
    /// Run without the kubelet that finishes graceful pod deletion.
    #[arg(long)]
    no_kubelet: bool,
    /// Run without the admission plugin that adds kubernetes.io/pvc-protection.
    #[arg(long)]
    no_pvc_protection_admission: bool,
    /// Give up after this many seconds per phase.
    #[arg(long, default_value_t = 60)]
    timeout_seconds: u64,
    /// Controllers to run, as kube-controller-manager's flag: names, `*` for
    /// all, `-name` to disable one (e.g. `*,-resource-claim`).
    #[arg(long, default_value = "*")]
    controllers: rekon_controllers::registry::Selection,
    #[command(flatten)]
    cache: crate::module_cache::CacheArgs,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let state_text = std::fs::read_to_string(&args.state)
        .with_context(|| format!("reading state file {}", args.state.display()))?;
    let state = rekon_apiserver::load_yaml_documents(&state_text)
        .map_err(|e| anyhow::anyhow!("state file {}: {e}", args.state.display()))?;
    let steps = match &args.script {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading script {}", path.display()))?;
            parse_steps(&text).map_err(|e| anyhow::anyhow!("script {}: {e}", path.display()))?
        }
        None => Vec::new(),
    };
    let faults = match &args.faults {
        Some(path) => Some(
            FaultConfig::from_file(path)
                .map_err(|e| anyhow::anyhow!("faults file {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let deciders = crate::guests::load_deciders(args.guests.as_deref(), &args.cache).await?;
    let journal = Arc::new(match &args.journal {
        Some(path) => Journal::with_sink(Box::new(
            std::fs::File::create(path)
                .with_context(|| format!("creating journal {}", path.display()))?,
        )),
        None => Journal::new(),
    });
    let options = ClusterOptions {
        seed: args.seed,
        garbage_collector: !args.no_gc,
        kubelet: if args.no_kubelet {
            KubeletMode::Off
        } else {
            KubeletMode::Instant
        },
        pvc_protection_admission: !args.no_pvc_protection_admission,
        faults,
        controllers: args.controllers,
    };
    let settle = Settle {
        timeout: Duration::from_secs(args.timeout_seconds),
        ..Settle::default()
    };
    let report = simulate(state, steps, options, settle, deciders, journal).await?;

    let mut yaml = String::new();
    for obj in &report.objects {
        yaml.push_str("---\n");
        yaml.push_str(&serde_yaml::to_string(obj)?);
    }
    match &args.output {
        Some(path) => {
            std::fs::write(path, yaml).with_context(|| format!("writing {}", path.display()))?
        }
        None => print!("{yaml}"),
    }
    match report.converged {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(not_converged) => {
            eprintln!("error: {not_converged}");
            Ok(ExitCode::from(2))
        }
    }
}
