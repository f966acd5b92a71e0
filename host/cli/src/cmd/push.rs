//! `rekon push FILE REF`: a module file to a registry, in the CNCF Wasm OCI
//! artifact layout; prints `REF@sha256:<manifest digest>` for a DecisionModule.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use rekon_oci::ModuleRef;

use super::registry::RegistryArgs;

#[derive(clap::Args)]
pub struct Args {
    /// The component (.wasm).
    file: PathBuf,
    /// Where to push: `REGISTRY/REPO[:TAG]` (tag defaults to `latest`).
    reference: String,
    #[command(flatten)]
    registry: RegistryArgs,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("{}: cannot read", args.file.display()))?;
    let module = ModuleRef::parse(&args.reference)?;
    let options = args.registry.options(&module)?;
    let pushed = rekon_oci::push(&bytes, &args.reference, &options).await?;
    println!("{pushed}");
    Ok(ExitCode::SUCCESS)
}
