//! `rekon pull REF [-o FILE]`: a module from a registry into the OCI cache (and
//! a file), checked against its digests and, with `--key`, its cosign signature.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use rekon_oci::{ModuleRef, PullRequest, Verification};

use super::registry::RegistryArgs;

#[derive(clap::Args)]
pub struct Args {
    /// `REGISTRY/REPO@sha256:<manifest digest>`, or `REGISTRY/REPO:TAG` (resolved to its digest).
    reference: String,
    /// Also write the module here.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// The sha256 the wasm bytes must have.
    #[arg(long)]
    sha256: Option<String>,
    /// Require a cosign signature valid under this public key (PEM).
    #[arg(long, value_name = "PUB.pem")]
    key: Option<PathBuf>,
    #[command(flatten)]
    registry: RegistryArgs,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let pulled = match &args.key {
        None => {
            args.registry
                .pull(&args.reference, args.sha256.clone())
                .await?
        }
        Some(key) => {
            let pem = std::fs::read(key)
                .with_context(|| format!("{}: cannot read the public key", key.display()))?;
            let module = ModuleRef::parse(&args.reference)?;
            let options = args.registry.options(&module)?;
            let image = match (module.digest(), &args.sha256) {
                (None, None) => rekon_oci::resolve(&args.reference, &options).await?,
                _ => args.reference.clone(),
            };
            let request = PullRequest {
                image,
                sha256: args.sha256.clone(),
                insecure: args.registry.insecure,
                auth: options.auth,
                verify: Some(Verification {
                    cosign_public_key_pem: pem,
                }),
            };
            args.registry.puller(&module)?.pull(&request).await?
        }
    };
    let path = match &args.output {
        Some(output) => {
            std::fs::write(output, &pulled.bytes)
                .with_context(|| format!("{}: cannot write", output.display()))?;
            output.clone()
        }
        None => pulled.path.clone(),
    };
    println!(
        "{}@{} wasm sha256:{} {} bytes{}{} -> {}",
        pulled.image.split('@').next().unwrap_or_default(),
        pulled.manifest_digest,
        pulled.wasm_sha256,
        pulled.bytes.len(),
        if pulled.verified {
            ", signature verified"
        } else {
            ""
        },
        if pulled.from_cache {
            ", from cache"
        } else {
            ""
        },
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}
