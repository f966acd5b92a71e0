//! `rekon eval`: one decision of a guest on one input file, printed as JSON.
//!
//! Exit codes: 0 the decision was printed; 1 rekon could not run it (bad
//! arguments, input or module); [`GUEST_FAILED`] the guest's decision failed
//! (a trap such as a panic, the deadline, the memory cap, a result too large),
//! printed on stderr.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use rekon_runtime::Decision;

use crate::guest_io::{self, AnyInput, GuestArgs};

/// The exit code of a decision the guest itself failed.
pub const GUEST_FAILED: u8 = 2;

/// Exit codes: 0 decided, 1 could not run, 2 the guest's decision failed
/// (trap, deadline, memory cap, result size).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    guest: GuestArgs,
    /// The exported decision: decide (pvc-protection, ephemeral-volume), decide-pod or
    /// decide-claim (resource-claim).
    #[arg(long)]
    decision: Decision,
    /// The decision input in its model form (kebab-case), as .json or .yaml.
    #[arg(long)]
    input: PathBuf,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    // `decide` belongs to two worlds: the guest's exports say which.
    let world = (args.decision != Decision::Decide).then(|| args.decision.world());
    let guest = args.guest.load(world)?;
    anyhow::ensure!(
        guest.world().decisions().contains(&args.decision),
        "{}: is a {} guest and does not export `{}`",
        args.guest.guest.display(),
        guest.world(),
        args.decision
    );
    let value: serde_json::Value = guest_io::read_file(&args.input)?;
    let input = AnyInput::from_value(guest.world(), args.decision, value).with_context(|| {
        format!(
            "{}: not a valid `{}` input",
            args.input.display(),
            args.decision
        )
    })?;
    // stderr, so stdout stays the decision's JSON.
    eprintln!("guest {} exports {}", guest.id(), guest.version().package());
    match guest_io::decide(&guest, input) {
        Ok(decision) => {
            println!("{}", decision.to_pretty_json());
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            eprintln!(
                "error: {}: decision `{}` failed: {err}",
                args.input.display(),
                args.decision
            );
            Ok(ExitCode::from(GUEST_FAILED))
        }
    }
}
