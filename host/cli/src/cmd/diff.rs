//! `rekon diff`: what a new module version would decide differently, for a
//! module of any world (a controller module included), in one of two ways:
//!
//! - over case inputs (`--cases`): both versions decide every case's input
//!   (its `expect` is not read);
//! - over a simulation (`--state`): the old module decides and the new one
//!   runs in shadow on every same input, as a DecisionModule's shadow does.
//!
//! Either way, each decision on which they differ is printed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rekon_contract::{BindWorld, ControllerWorld, WorldVisitor};
use rekon_controllers::decider::{ShadowDifference, ShadowTally, Shadowed, Slot};
use rekon_controllers::generic::{ControllerModule, check};
use rekon_controllers::journal::Journal;
use rekon_controllers::selection::Selection;
use rekon_runtime::{Engine, EngineConfig, GuestPre, JsonDecisionError};
use rekon_simulate::{ClusterOptions, Deciders, Settle, Step, parse_steps, simulate};
use serde_json::{Value, json};

use crate::guest_io;
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
    /// Compare over the inputs of these case files (or directories of them,
    /// as `rekon test` reads them) instead of a simulation.
    #[arg(long, num_args = 1.., required_unless_present = "state")]
    cases: Vec<PathBuf>,
    /// Multi-document YAML (or a List) of the objects to start from; repeat it
    /// to start from several files (a CRD and its objects).
    #[arg(long, conflicts_with = "cases")]
    state: Vec<PathBuf>,
    /// YAML list of steps applied after the controllers went idle.
    #[arg(long, requires = "state")]
    script: Option<PathBuf>,
    /// Modules of the other controllers (default: only the controllers of the
    /// compared world, or the compared controller module, run).
    #[arg(long, requires = "state")]
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
    let (counts, differences, converged) = if args.cases.is_empty() {
        over_simulation(&args, &old, &new).await?
    } else {
        let (counts, differences) = over_cases(&args.cases, &old, &new)?;
        (counts, differences, Ok(()))
    };

    print!("{}", render(&differences));
    println!(
        "{} ({}) vs {} ({}): {} decisions agreed, {} differed, {} failed in the new module",
        args.old.display(),
        old.id().short_digest(),
        args.new.display(),
        new.id().short_digest(),
        counts.agreed,
        counts.differed,
        counts.failed
    );
    if let Err(not_converged) = converged {
        eprintln!("error: {not_converged}");
        return Ok(ExitCode::from(2));
    }
    Ok(if counts.differed + counts.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// How many decisions agreed, differed, or failed in the new module.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    agreed: u64,
    differed: u64,
    failed: u64,
}

impl Counts {
    /// Counts one pair of outcomes (`Err`: the guest's decision failed) and
    /// returns the difference to show, if any.
    fn compare(
        &mut self,
        decision: &'static str,
        key: String,
        old: Result<Value, String>,
        new: Result<Value, String>,
    ) -> Option<ShadowDifference> {
        let error = |message: String| json!({ "error": message });
        let (active, shadow) = match (old, new) {
            (Ok(old), Ok(new)) if old == new => {
                self.agreed += 1;
                return None;
            }
            (old, Ok(new)) => {
                self.differed += 1;
                (old.unwrap_or_else(error), new)
            }
            (old, Err(message)) => {
                self.failed += 1;
                (old.unwrap_or_else(error), error(message))
            }
        };
        Some(ShadowDifference {
            decision,
            key,
            active,
            shadow,
        })
    }
}

/// Both versions decide the input of every case of the files under `paths`;
/// a difference is keyed by file and case name.
fn over_cases(
    paths: &[PathBuf],
    old: &GuestPre,
    new: &GuestPre,
) -> anyhow::Result<(Counts, Vec<ShadowDifference>)> {
    let mut counts = Counts::default();
    let mut differences = Vec::new();
    for file in super::test::case_files(paths)? {
        let cases: super::test::CaseFile = guest_io::read_file(&file)?;
        for case in cases.cases {
            let key = format!("{}: {}", file.display(), case.name);
            let world = old.world();
            let decision = world
                .functions()
                .iter()
                .copied()
                .find(|f| *f == case.decision)
                .with_context(|| {
                    format!(
                        "{key}: unknown decision `{}`: a {world} guest exports {}",
                        case.decision,
                        world.functions().join(", ")
                    )
                })?;
            let decide =
                |guest: &GuestPre| match guest_io::decide(guest, decision, case.input.clone()) {
                    Ok(value) => Ok(Ok(value)),
                    Err(JsonDecisionError::Input { source, .. }) => Err(anyhow::anyhow!(
                        "{key}: input is not a valid `{decision}` input: {source}"
                    )),
                    Err(JsonDecisionError::Decision(err)) => Ok(Err(err.to_string())),
                };
            let (before, after) = (decide(old)?, decide(new)?);
            differences.extend(counts.compare(decision, key, before, after));
        }
    }
    Ok((counts, differences))
}

type Compared = (
    Counts,
    Vec<ShadowDifference>,
    Result<(), rekon_controllers::host::NotConverged>,
);

/// A simulation from `--state` in which `old` decides and `new` shadows it.
async fn over_simulation(args: &Args, old: &GuestPre, new: &GuestPre) -> anyhow::Result<Compared> {
    let state = read_state(&args.state)?;
    let steps = read_script(args.script.as_deref())?;
    // A finite run: every difference is kept (each one bounded).
    let tally = Arc::new(ShadowTally::new(usize::MAX).retaining_bytes(usize::MAX));
    let (deciders, mut modules) = match args.guests.as_deref() {
        Some(dir) => crate::guests::load_all(Some(dir), &args.cache).await?,
        None => (Deciders::new(), Vec::new()),
    };
    let mut counts = Counts::default();
    let mut differences = Vec::new();
    let (deciders, controllers) = if old.world().is_generic() {
        let (module, described) = shadowed_module(old, new, tally.clone())?;
        let name = module.name().to_string();
        differences.extend(counts.compare("describe", name.clone(), described.0, described.1));
        // The compared module replaces a module of the same controller in --guests.
        modules.retain(|m| m.name() != name);
        modules.push(module);
        let selection = match args.guests {
            Some(_) => format!("*,{name}"),
            None => name,
        };
        (deciders, selection.parse()?)
    } else {
        let controllers = match args.guests {
            Some(_) => Selection::default(),
            None => Selection::for_world(old.world().name()),
        };
        (
            compared(old.clone(), new.clone(), tally.clone(), deciders),
            controllers,
        )
    };
    let settle = Settle {
        timeout: Duration::from_secs(args.timeout_seconds),
        ..Settle::default()
    };
    let options = ClusterOptions {
        seed: args.seed,
        controllers,
        modules,
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
    counts.agreed += tally.agreed();
    counts.differed += tally.differed();
    counts.failed += tally.failed();
    differences.extend(tally.differences());
    Ok((counts, differences, report.converged))
}

/// The steps of a script file (none without one); `simulate` reads it so too.
pub fn read_script(path: Option<&Path>) -> anyhow::Result<Vec<Step>> {
    let Some(path) = path else {
        return Ok(Vec::new());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading script {}", path.display()))?;
    parse_steps(&text).map_err(|e| anyhow::anyhow!("script {}: {e}", path.display()))
}

/// Every object of the state files, in order (`simulate` reads them so too).
pub fn read_state(paths: &[PathBuf]) -> anyhow::Result<Vec<Value>> {
    let mut objects = Vec::new();
    for path in paths {
        objects.extend(read_state_file(path)?);
    }
    Ok(objects)
}

fn read_state_file(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading state file {}", path.display()))?;
    rekon_apiserver::load_yaml_documents(&text)
        .map_err(|e| anyhow::anyhow!("state file {}: {e}", path.display()))
}

/// What the old and the new version describe (serde form; `Err`: `describe` failed).
type Described = (Result<Value, String>, Result<Value, String>);

/// The old controller module, as its description says, deciding with `new`
/// in shadow; beside it both descriptions, which the shadow cannot compare:
/// the host asks once, at load.
fn shadowed_module(
    old: &GuestPre,
    new: &GuestPre,
    tally: Arc<ShadowTally>,
) -> anyhow::Result<(ControllerModule, Described)> {
    let description = old
        .describe_controller()
        .with_context(|| format!("{}: describe", old.id()))?;
    let described = new.describe_controller().map_err(|e| e.to_string());
    if let Ok(candidate) = &described {
        check(candidate.clone()).with_context(|| format!("{}: the new version", new.id()))?;
    }
    let as_value = |d: &rekon_contract::controller::Description| {
        serde_json::to_value(d).expect("descriptions serialise")
    };
    let described = (Ok(as_value(&description)), described.map(|d| as_value(&d)));
    let shadowed =
        Shadowed::<ControllerWorld>::new(Arc::new(old.clone()), Arc::new(new.clone()), tally);
    let module = ControllerModule::new(description, Arc::new(shadowed))
        .with_context(|| format!("{}: the old version", old.id()))?;
    Ok((module, described))
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

    #[test]
    fn counts_agreement_difference_and_a_failing_new_version() {
        let mut counts = Counts::default();
        let same = counts.compare("decide", "a".into(), Ok(json!(1)), Ok(json!(1)));
        assert!(same.is_none());
        let differs = counts
            .compare("decide", "b".into(), Err("trap".into()), Ok(json!(2)))
            .unwrap();
        assert_eq!(differs.active, json!({"error": "trap"}));
        let fails = counts
            .compare("describe", "c".into(), Ok(json!(1)), Err("deadline".into()))
            .unwrap();
        assert_eq!(fails.shadow, json!({"error": "deadline"}));
        assert_eq!(
            counts,
            Counts {
                agreed: 1,
                differed: 1,
                failed: 1
            }
        );
    }
}
