//! `rekon sign --key KEY.pem REF`: a cosign-compatible signature of the
//! manifest REF names, pushed beside it as `REPO:sha256-<digest>.sig`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use rekon_oci::ModuleRef;

use super::registry::RegistryArgs;

#[derive(clap::Args)]
pub struct Args {
    /// An unencrypted ECDSA P-256 private key (PKCS#8 or SEC1 PEM), e.g. from `rekon generate-key`.
    #[arg(long, value_name = "KEY.pem")]
    key: PathBuf,
    /// `REGISTRY/REPO@sha256:...` (a tag is resolved to its digest).
    reference: String,
    #[command(flatten)]
    registry: RegistryArgs,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let pem = std::fs::read(&args.key)
        .with_context(|| format!("{}: cannot read the private key", args.key.display()))?;
    let options = args.registry.options(&ModuleRef::parse(&args.reference)?)?;
    let signature = rekon_oci::sign(&args.reference, &pem, &options).await?;
    println!("{signature}");
    Ok(ExitCode::SUCCESS)
}
