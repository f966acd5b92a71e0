//! `rekon simulate`: the what-if tool. Runs the controllers against the embedded
//! API server seeded with a state file, applies a script, prints the final state.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rekon_apiserver::{FaultConfig, KubeletMode};
use rekon_controllers::journal::Journal;
use rekon_simulate::workload::Workload;
use rekon_simulate::{ClusterOptions, Settle, State, simulate_each};

#[derive(clap::Args)]
pub struct Args {
    /// Multi-document YAML (or a List) of the objects to start from, of any
    /// kinds the server serves (CustomResourceDefinitions and their objects
    /// included); repeat it to start from several files.
    #[arg(
        long,
        required_unless_present = "workload",
        conflicts_with = "workload"
    )]
    state: Vec<PathBuf>,
    /// Start from a generated state instead of a file: `release` is, per unit, a deleting
    /// PVC no pod uses plus a running pod and the PVC it uses, in namespace `release`.
    #[arg(long)]
    workload: Option<Workload>,
    /// Units of the generated `--workload`.
    #[arg(long, default_value_t = 1000, requires = "workload")]
    units: usize,
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
    controllers: rekon_controllers::selection::Selection,
    #[command(flatten)]
    cache: crate::module_cache::CacheArgs,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let state = match args.workload {
        Some(workload) => State::Generated(Box::new(workload.objects(args.units))),
        None if args.state.is_empty() => anyhow::bail!("give --state or --workload"),
        None => State::Objects(super::diff::read_state(&args.state)?),
    };
    let steps = super::diff::read_script(args.script.as_deref())?;
    let faults = match &args.faults {
        Some(path) => Some(
            FaultConfig::from_file(path)
                .map_err(|e| anyhow::anyhow!("faults file {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let (deciders, modules) = crate::guests::load_all(args.guests.as_deref(), &args.cache).await?;
    args.controllers
        .check_known(modules.iter().map(|m| m.name()))?;
    // Nothing reads the journal after the run but its file: keep no copy in memory.
    let journal = Arc::new(match &args.journal {
        Some(path) => Journal::to_sink(Box::new(
            std::fs::File::create(path)
                .with_context(|| format!("creating journal {}", path.display()))?,
        )),
        None => Journal::disabled(),
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
        modules,
    };
    let settle = Settle {
        timeout: Duration::from_secs(args.timeout_seconds),
        ..Settle::default()
    };
    let (mut out, name): (Box<dyn Write + Send>, String) = match &args.output {
        Some(path) => (
            Box::new(
                std::fs::File::create(path)
                    .with_context(|| format!("writing {}", path.display()))?,
            ),
            path.display().to_string(),
        ),
        None => (Box::new(std::io::stdout()), "stdout".to_string()),
    };
    // One object at a time, decoded from the store's text as it is written: neither the
    // whole text nor every object's JSON tree is held at once.
    let mut out = std::io::BufWriter::new(&mut out);
    let mut written = Ok(());
    let report = simulate_each(state, steps, options, settle, deciders, journal, |obj| {
        if written.is_ok() {
            written = writeln!(out, "---").and_then(|()| {
                serde_yaml::to_writer(&mut out, &obj).map_err(std::io::Error::other)
            });
        }
    })
    .await?;
    written
        .and_then(|()| out.flush())
        .with_context(|| format!("writing {name}"))?;
    drop(out);
    match report.converged {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(not_converged) => {
            eprintln!("error: {not_converged}");
            Ok(ExitCode::from(2))
        }
    }
}
