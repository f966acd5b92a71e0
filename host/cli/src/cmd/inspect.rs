//! `rekon inspect FILE|REF`: what a module is, as the host would load it:
//! world, contract version, exports, digest and size.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use rekon_runtime::{Engine, EngineConfig};

use super::registry::{RegistryArgs, is_reference};

#[derive(clap::Args)]
pub struct Args {
    /// A component file, or a registry reference.
    module: PathBuf,
    #[command(flatten)]
    registry: RegistryArgs,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (bytes, name, manifest) = if is_reference(&args.module) {
        let reference = args.module.to_string_lossy();
        let pulled = args.registry.pull(&reference, None).await?;
        (
            pulled.bytes.to_vec(),
            pulled.image.clone(),
            Some(pulled.manifest_digest),
        )
    } else {
        let bytes = std::fs::read(&args.module)
            .with_context(|| format!("{}: cannot read", args.module.display()))?;
        (bytes, args.module.display().to_string(), None)
    };
    let engine = Engine::new(EngineConfig::default()).context("starting the wasm engine")?;
    let guest = engine.loader().bytes(&name, &bytes)?;
    let world = guest.world();
    let version = guest.version();
    println!("module: {name}");
    println!("world: {}", world.name());
    println!("contract version: {}", version.version);
    println!(
        "exports: {} ({})",
        world.export(version).unwrap_or_default(),
        world.functions().join(", ")
    );
    println!("sha256: {}", sha256_hex(&bytes));
    if let Some(manifest) = manifest {
        println!("manifest digest: {manifest}");
    }
    println!("size: {} bytes", bytes.len());
    Ok(ExitCode::SUCCESS)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}
