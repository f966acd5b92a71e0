//! `rekon diff`: what a new module version would decide differently. Runs a
//! simulation with the old module active and the new one in shadow, so both
//! decide every same input, and prints each decision on which they differ.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rekon_contract::{BindWorld, WorldVisitor};
use rekon_controllers::decider::{ShadowDifference, ShadowTally, Shadowed, Slot};
use rekon_controllers::journal::Journal;
use rekon_controllers::selection::Selection;
use rekon_runtime::{Engine, EngineConfig, GuestPre};
use rekon_simulate::{ClusterOptions, Deciders, Settle, parse_steps, simulate};

use crate::module_cache::CacheArgs;

#[derive(clap::Args)]
pub struct Args {
    /// The version that decides now (a file or a registry reference).
    #[arg(long)]
    old: PathBuf,
    /// The candidate; must implement the same world as --old (a file or a registry reference).
    #[arg(long)]
    new: PathBuf,
    #[command(flatten)]
    registry: super::registry::RegistryArgs,
    /// Multi-document YAML (or a List) of the objects to start from.
    #[arg(long)]
    state: PathBuf,
    /// YAML list of steps applied after the controllers went idle.
    #[arg(long)]
    script: Option<PathBuf>,
    /// Modules of the other controllers (default: only the controllers of the
    /// compared world run).
    #[arg(long)]
    guests: Option<PathBuf>,
    /// Seed for generated names.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Give up after this many seconds per phase.
    #[arg(long, default_value_t = 60)]
    timeout_seconds: u64,
    #[command(flatten)]
    cache: CacheArgs,
}

/// Exit status: 0 when every decision agreed, 1 when any differed (or the new
/// module failed), 2 when the simulation did not converge.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let state = read_state(&args.state)?;
    let steps = match &args.script {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading script {}", path.display()))?;
            parse_steps(&text).map_err(|e| anyhow::anyhow!("script {}: {e}", path.display()))?
        }
        None => Vec::new(),
    };
    let engine = Engine::new(EngineConfig::default()).context("starting the wasm engine")?;
    let cache = args.cache.open(&engine)?;
    let old = super::registry::load_guest(
        &cache,
        &engine,
        || engine.loader(),
        &args.old,
        &args.registry,
    )
    .await?;
    let new = super::registry::load_guest(
        &cache,
        &engine,
        || engine.loader().world(old.world()),
        &args.new,
        &args.registry,
    )
    .await?;
    // A finite run: every difference is kept (each one bounded).
    let tally = Arc::new(ShadowTally::new(usize::MAX).retaining_bytes(usize::MAX));
    let deciders = match args.guests.as_deref() {
        Some(dir) => crate::guests::load_deciders(Some(dir), &args.cache).await?,
        None => Deciders::new(),
    };
    let deciders = compared(old.clone(), new.clone(), tally.clone(), deciders);
    let controllers = match args.guests {
        Some(_) => Selection::default(),
        None => Selection::for_world(old.world().name()),
    };
    let settle = Settle {
        timeout: Duration::from_secs(args.timeout_seconds),
        ..Settle::default()
    };
    let options = ClusterOptions {
        seed: args.seed,
        controllers,
        ..ClusterOptions::default()
    };
    let report = simulate(
        state,
        steps,
        options,
        settle,
        deciders,
        Arc::new(Journal::new()),
    )
    .await?;

    print!("{}", render(&tally.differences()));
    println!(
        "{} ({}) vs {} ({}): {} decisions agreed, {} differed, {} failed in the new module",
        args.old.display(),
        old.id().short_digest(),
        args.new.display(),
        new.id().short_digest(),
        tally.agreed(),
        tally.differed(),
        tally.failed()
    );
    if let Err(not_converged) = report.converged {
        eprintln!("error: {not_converged}");
        return Ok(ExitCode::from(2));
    }
    Ok(if tally.differed() + tally.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn read_state(path: &Path) -> anyhow::Result<Vec<serde_json::Value>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading state file {}", path.display()))?;
    rekon_apiserver::load_yaml_documents(&text)
        .map_err(|e| anyhow::anyhow!("state file {}: {e}", path.display()))
}

/// The compared world decides with `old` shadowed by `new`; the other
/// worlds keep the slots `deciders` has.
fn compared(old: GuestPre, new: GuestPre, tally: Arc<ShadowTally>, deciders: Deciders) -> Deciders {
    struct Compare {
        guests: Option<(GuestPre, GuestPre, Arc<ShadowTally>)>,
        deciders: Deciders,
    }
    impl WorldVisitor for Compare {
        fn visit<W: BindWorld>(&mut self) {
            let ours = |g: &(GuestPre, GuestPre, _)| g.0.world().name() == W::NAME;
            if let Some((old, new, tally)) = self.guests.take_if(|g| ours(g)) {
                let shadowed = Shadowed::<W>::new(Arc::new(old), Arc::new(new), tally);
                self.deciders
                    .insert(Arc::new(Slot::<W>::new(Arc::new(shadowed))));
            }
        }
    }
    let mut compare = Compare {
        guests: Some((old, new, tally)),
        deciders,
    };
    rekon_contract::visit_worlds(&mut compare);
    compare.deciders
}

/// Per key, each differing decision as a line diff of the two decisions (YAML).
fn render(differences: &[ShadowDifference]) -> String {
    let mut by_key: BTreeMap<&str, Vec<&ShadowDifference>> = BTreeMap::new();
    for difference in differences {
        by_key.entry(&difference.key).or_default().push(difference);
    }
    let mut out = String::new();
    for (key, differences) in by_key {
        for difference in differences {
            let yaml =
                |v: &serde_json::Value| serde_yaml::to_string(v).expect("decisions serialise");
            out.push_str(&format!(
                "--- {key} ({}): - old, + new\n",
                difference.decision
            ));
            out.push_str(&crate::line_diff::line_diff(
                &yaml(&difference.active),
                &yaml(&difference.shadow),
            ));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_each_difference_under_its_key_as_a_line_diff() {
        let differences = [
            ShadowDifference {
                decision: "decide",
                key: "ns/b".into(),
                active: json!({"actions": [{"remove-finalizer": {"name": "b"}}]}),
                shadow: json!({"actions": []}),
            },
            ShadowDifference {
                decision: "decide",
                key: "ns/a".into(),
                active: json!("need-live-pods"),
                shadow: json!({"error": "trapped"}),
            },
        ];
        let text = render(&differences);
        let a = text.find("--- ns/a (decide)").unwrap();
        let b = text.find("--- ns/b (decide)").unwrap();
        assert!(a < b, "sorted by key:\n{text}");
        assert!(
            text.contains("- need-live-pods\n+ error: trapped"),
            "{text}"
        );
        assert!(text.contains("+ actions: []"), "{text}");
    }
}
