//! What `eval` and `test` share: loading a guest from flags, reading model
//! values from JSON or YAML, and calling any decision by name.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use rekon_contract::model;
use rekon_runtime::{Decision, Engine, EngineConfig, GuestPre, Limits, RuntimeError, World};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The guest flags of `eval` and `test`.
#[derive(clap::Args)]
pub struct GuestArgs {
    /// The guest component (.wasm, built for wasm32-wasip2).
    #[arg(long)]
    pub guest: PathBuf,
    /// Wall-time limit of one decision, in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub deadline_ms: u64,
    /// Memory cap of one decision, in MiB.
    #[arg(long, default_value_t = 64)]
    pub memory_mib: usize,
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
        let loader = engine.loader();
        let loader = match world {
            Some(world) => loader.world(world),
            None => loader,
        };
        Ok(loader.file(&self.guest)?)
    }
}

/// The input of any decision.
#[derive(Debug)]
// One value per CLI call, moved straight into the guest: boxing buys nothing.
#[allow(clippy::large_enum_variant)]
pub enum AnyInput {
    Pvc(model::PvcInput),
    Pod(model::PodInput),
    Claim(model::ClaimInput),
    Volume(rekon_guest::ephemeral::VolumeInput),
}

/// The output of any decision; serialises as the decision itself.
#[derive(Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AnyDecision {
    Pvc(model::PvcDecision),
    Pod(model::PodDecision),
    Claim(model::ClaimDecision),
    Volume(rekon_guest::ephemeral::VolumeDecision),
}

impl AnyInput {
    /// Interprets `value` (any serde format) as the input of `decision` of `world`.
    pub fn from_value<'de, D: serde::Deserializer<'de>>(
        world: World,
        decision: Decision,
        value: D,
    ) -> Result<Self, D::Error> {
        use serde::Deserialize as _;
        Ok(match decision {
            // Its one function is also called `decide`.
            _ if world == World::EphemeralVolume => {
                Self::Volume(rekon_guest::ephemeral::VolumeInput::deserialize(value)?)
            }
            Decision::Decide => Self::Pvc(model::PvcInput::deserialize(value)?),
            Decision::DecidePod => Self::Pod(model::PodInput::deserialize(value)?),
            Decision::DecideClaim => Self::Claim(model::ClaimInput::deserialize(value)?),
        })
    }
}

impl AnyDecision {
    /// Interprets `value` as what `decision` of `world` returns.
    pub fn from_value<'de, D: serde::Deserializer<'de>>(
        world: World,
        decision: Decision,
        value: D,
    ) -> Result<Self, D::Error> {
        use serde::Deserialize as _;
        Ok(match decision {
            _ if world == World::EphemeralVolume => {
                Self::Volume(rekon_guest::ephemeral::VolumeDecision::deserialize(value)?)
            }
            Decision::Decide => Self::Pvc(model::PvcDecision::deserialize(value)?),
            Decision::DecidePod => Self::Pod(model::PodDecision::deserialize(value)?),
            Decision::DecideClaim => Self::Claim(model::ClaimDecision::deserialize(value)?),
        })
    }

    pub fn to_pretty_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("model values always serialise")
    }
}

/// Runs the decision the input belongs to. The runtime never touches tokio,
/// so this is safe from any context (a current-thread runtime included).
pub fn decide(guest: &GuestPre, input: AnyInput) -> Result<AnyDecision, RuntimeError> {
    Ok(match input {
        AnyInput::Pvc(input) => AnyDecision::Pvc(guest.decide_pvc(input)?),
        AnyInput::Pod(input) => AnyDecision::Pod(guest.decide_pod(input)?),
        AnyInput::Claim(input) => AnyDecision::Claim(guest.decide_claim(input)?),
        AnyInput::Volume(input) => {
            AnyDecision::Volume(guest.decide::<rekon_contract::EphemeralVolumeWorld>(input)?)
        }
    })
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
