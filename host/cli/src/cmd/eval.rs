//! `rekon eval`: one decision of a guest on one input file, printed as JSON.
//!
//! Exit codes: 0 the decision was printed; 1 rekon could not run it (bad
//! arguments, input or module); [`GUEST_FAILED`] the guest's decision failed
//! (a trap such as a panic, the deadline, the memory cap, a result too large),
//! printed on stderr.

use std::path::PathBuf;
use std::process::ExitCode;

use rekon_runtime::JsonDecisionError;

use crate::guest_io::{self, GuestArgs};

/// The exit code of a decision the guest itself failed.
pub const GUEST_FAILED: u8 = 2;

/// Exit codes: 0 decided, 1 could not run, 2 the guest's decision failed
/// (trap, deadline, memory cap, result size).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    guest: GuestArgs,
    /// The exported decision, a function of the guest's world (e.g. decide,
    /// decide-pod, decide-claim).
    #[arg(long)]
    decision: String,
    /// The decision input in its model form (kebab-case), as .json or .yaml;
    /// a decision without input (a controller module's `describe`) needs none.
    #[arg(long)]
    input: Option<PathBuf>,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A decision of one world loads the guest as that world (a guest of another
    // world is refused naming its exports); `decide` belongs to several worlds:
    // the guest's exports say which.
    let worlds = guest_io::worlds_deciding(&args.decision)?;
    let guest = args.guest.load(match worlds.as_slice() {
        [world] => Some(*world),
        _ => None,
    })?;
    anyhow::ensure!(
        guest.world().functions().contains(&args.decision.as_str()),
        "{}: is a {} guest and does not export `{}`",
        args.guest.guest.display(),
        guest.world(),
        args.decision
    );
    let value: serde_json::Value = match &args.input {
        Some(path) => guest_io::read_file(path)?,
        None => serde_json::Value::Null,
    };
    let shown = match &args.input {
        Some(path) => path.display().to_string(),
        None => format!("`{}` without --input", args.decision),
    };
    // stderr, so stdout stays the decision's JSON.
    eprintln!("guest {} exports {}", guest.id(), guest.version().package());
    match guest_io::decide(&guest, &args.decision, value) {
        Ok(decision) => {
            println!("{}", guest_io::to_pretty_json(&decision));
            Ok(ExitCode::SUCCESS)
        }
        Err(JsonDecisionError::Input { .. }) if args.input.is_none() => {
            anyhow::bail!("`{}` decides on an input: pass --input FILE", args.decision)
        }
        Err(JsonDecisionError::Input { source, .. }) => {
            anyhow::bail!("{shown}: not a valid `{}` input: {source}", args.decision)
        }
        Err(JsonDecisionError::Decision(err)) => {
            eprintln!("error: {shown}: decision `{}` failed: {err}", args.decision);
            Ok(ExitCode::from(GUEST_FAILED))
        }
    }
}
