//! `rekon eval`: one decision of a guest on one input file, printed as JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use rekon_runtime::Decision;

use crate::guest_io::{self, AnyInput, GuestArgs};

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
    let decision = guest_io::decide(&guest, input).with_context(|| {
        format!(
            "{}: decision `{}` failed",
            args.input.display(),
            args.decision
        )
    })?;
    println!("{}", decision.to_pretty_json());
    Ok(ExitCode::SUCCESS)
}
