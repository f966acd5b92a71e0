use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub async fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`rekon simulate` is not implemented yet")
}
