//! What `eval` and `test` share: loading a guest from flags, reading model
//! values from JSON or YAML, and calling any decision of any world by name.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use std::collections::BTreeSet;

use rekon_runtime::{Engine, EngineConfig, GuestPre, JsonDecisionError, Limits, World};
use serde::de::DeserializeOwned;

use crate::module_cache::CacheArgs;

/// The guest flags of `eval` and `test`.
#[derive(clap::Args)]
pub struct GuestArgs {
    /// The guest component (.wasm, built for wasm32-wasip2), or a registry
    /// reference (`REGISTRY/REPO@sha256:...` or `:TAG`).
    #[arg(long)]
    pub guest: PathBuf,
    #[command(flatten)]
    pub registry: crate::cmd::registry::RegistryArgs,
    /// Wall-time limit of one decision, in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub deadline_ms: u64,
    /// Memory cap of one decision, in MiB.
    #[arg(long, default_value_t = 64)]
    pub memory_mib: usize,
    #[command(flatten)]
    pub cache: CacheArgs,
}

impl GuestArgs {
    /// Loads the guest on a small engine sized for these limits; with `world`,
    /// a guest of another world is rejected at load.
    pub fn load(&self, world: Option<World>) -> anyhow::Result<GuestPre> {
        let limits = Limits {
            deadline: Duration::from_millis(self.deadline_ms),
            memory_bytes: self.memory_mib << 20,
            ..Limits::default()
        };
        let engine = Engine::new(EngineConfig {
            max_concurrent_decisions: 4,
            max_memory_bytes: limits.memory_bytes,
            default_limits: limits,
        })
        .context("starting the wasm engine")?;
        let cache = self.cache.open(&engine)?;
        let loader = || match world {
            Some(world) => engine.loader().world(world),
            None => engine.loader(),
        };
        crate::cmd::registry::load_guest_blocking(
            &cache,
            &engine,
            loader,
            &self.guest,
            &self.registry,
        )
    }
}

/// The worlds exporting decision `function`; an error when none does.
pub fn worlds_deciding(function: &str) -> anyhow::Result<Vec<World>> {
    let worlds: Vec<World> = World::all()
        .filter(|w| w.functions().contains(&function))
        .collect();
    if worlds.is_empty() {
        let known: BTreeSet<&str> = World::all()
            .flat_map(|w| w.functions().iter().copied())
            .collect();
        anyhow::bail!(
            "unknown decision `{function}`: expected one of {}",
            known.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(worlds)
}

/// Runs decision `function` of the guest's world on `input` (its serde form)
/// and returns the decision's serde form. The runtime never touches tokio, so
/// this is safe from any context (a current-thread runtime included).
pub fn decide(
    guest: &GuestPre,
    function: &str,
    input: serde_json::Value,
) -> Result<serde_json::Value, JsonDecisionError> {
    guest.world().decide_json(guest, function, input)
}

pub fn to_pretty_json(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON values always serialise")
}

/// Reads `path` as JSON (`.json`) or YAML (`.yaml`, `.yml`) into `T`.
pub fn read_file<T: DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => serde_json::from_str(&text)
            .with_context(|| format!("{}: invalid JSON input", path.display())),
        Some("yaml" | "yml") => serde_yaml::from_str(&text)
            .with_context(|| format!("{}: invalid YAML input", path.display())),
        _ => anyhow::bail!(
            "{}: unknown input format: use a .json, .yaml or .yml file",
            path.display()
        ),
    }
}
