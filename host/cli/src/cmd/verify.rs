//! `rekon verify --key PUB.pem REF`: whether the manifest REF names carries a
//! cosign signature valid under the key.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use rekon_oci::ModuleRef;

use super::registry::RegistryArgs;

#[derive(clap::Args)]
pub struct Args {
    /// The cosign public key (ECDSA P-256 `PUBLIC KEY` PEM).
    #[arg(long, value_name = "PUB.pem")]
    key: PathBuf,
    /// `REGISTRY/REPO@sha256:...` or `REGISTRY/REPO:TAG`.
    reference: String,
    #[command(flatten)]
    registry: RegistryArgs,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let pem = std::fs::read(&args.key)
        .with_context(|| format!("{}: cannot read the public key", args.key.display()))?;
    let module = ModuleRef::parse(&args.reference)?;
    let digest = rekon_oci::verify(&args.reference, &pem, &args.registry.options(&module)?).await?;
    println!("verified {}", module.with_digest(&digest));
    Ok(ExitCode::SUCCESS)
}
