//! Finding and loading the guest modules for `run` and `simulate`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use rekon_controllers::decider::{ClaimDecider, PvcDecider, Slot};
use rekon_runtime::{Engine, EngineConfig, World};
use rekon_simulate::Deciders;

/// File names a guest may have in the guests directory, in order of preference.
fn candidates(world: World) -> [&'static str; 2] {
    match world {
        World::PvcProtection => ["pvc-protection.wasm", "rekon_guest_pvc_protection.wasm"],
        World::ResourceClaim => ["resource-claim.wasm", "rekon_guest_resource_claim.wasm"],
    }
}

fn find(dir: &Path, world: World) -> anyhow::Result<PathBuf> {
    let names = candidates(world);
    names
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
        .with_context(|| {
            format!(
                "no {} guest in {}: expected {} (build the reference guests with `make guests`)",
                world.name(),
                dir.display(),
                names.join(" or ")
            )
        })
}

/// Loads both controllers' guests from `dir` into one engine.
pub fn load_deciders(dir: Option<&Path>) -> anyhow::Result<Deciders> {
    let dir = dir.context("no guests directory: pass --guests DIR or set REKON_GUEST_DIR")?;
    let engine = Engine::new(EngineConfig::default()).context("starting the wasm engine")?;
    let pvc = engine.loader().world(World::PvcProtection).file(find(dir, World::PvcProtection)?)?;
    let claim = engine.loader().world(World::ResourceClaim).file(find(dir, World::ResourceClaim)?)?;
    tracing::info!(pvc = %pvc.id().name(), pvc_digest = %pvc.id().digest(),
        claim = %claim.id().name(), claim_digest = %claim.id().digest(), "guests loaded");
    let pvc: Arc<dyn PvcDecider> = Arc::new(pvc);
    let claim: Arc<dyn ClaimDecider> = Arc::new(claim);
    Ok(Deciders {
        pvc: Arc::new(Slot::new(pvc)),
        claim: Arc::new(Slot::new(claim)),
    })
}
