//! Testing a guest from `cargo test`, the way the host runs it.
//!
//! ```no_run
//! use rekon_runtime::testing::GuestHarness;
//! use rekon_contract::model::{PvcDecision, PvcInput};
//!
//! #[test]
//! fn unused_pvc_asks_for_live_pods() {
//!     let guest = GuestHarness::load("target/wasm32-wasip2/release/my_guest.wasm").unwrap();
//!     let mut input = PvcInput::default();
//!     input.pvc.meta.deletion_timestamp = Some("2025-01-01T00:00:00Z".into());
//!     input.pvc.meta.finalizers = vec!["kubernetes.io/pvc-protection".into()];
//!     assert_eq!(guest.decide_pvc(input).unwrap(), PvcDecision::NeedLivePods);
//! }
//! ```
//!
//! The harness uses the host's own engine settings, limits, WASI context and
//! contract checks, so a guest that passes here loads and behaves the same in
//! `rekon run`.

use std::path::{Path, PathBuf};

use rekon_contract::model;

use crate::engine::{Engine, EngineConfig, EngineError};
use crate::error::RuntimeError;
use crate::guest::GuestPre;
use crate::limits::Limits;
use crate::load::LoadError;

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// One guest on its own small engine.
pub struct GuestHarness {
    guest: GuestPre,
}

impl GuestHarness {
    /// Loads a component with the default limits; its world is detected.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, HarnessError> {
        Self::load_with(path, Limits::default())
    }

    pub fn load_with(path: impl AsRef<Path>, limits: Limits) -> Result<Self, HarnessError> {
        let engine = Engine::new(EngineConfig {
            max_concurrent_decisions: 8,
            max_memory_bytes: limits.memory_bytes.max(Limits::default().memory_bytes),
            default_limits: limits,
        })?;
        let guest = engine.loader().file(path)?;
        Ok(Self { guest })
    }

    pub fn guest(&self) -> &GuestPre {
        &self.guest
    }

    pub fn decide_pvc(&self, input: model::PvcInput) -> Result<model::PvcDecision, RuntimeError> {
        self.guest.decide_pvc(input)
    }

    pub fn decide_pod(&self, input: model::PodInput) -> Result<model::PodDecision, RuntimeError> {
        self.guest.decide_pod(input)
    }

    pub fn decide_claim(
        &self,
        input: model::ClaimInput,
    ) -> Result<model::ClaimDecision, RuntimeError> {
        self.guest.decide_claim(input)
    }
}

/// Where `make guests` puts the built components: `$REKON_GUEST_DIR`, else
/// `$CARGO_TARGET_DIR/wasm32-wasip2/guest`, else `target/wasm32-wasip2/guest`
/// under the workspace root.
pub fn guest_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("REKON_GUEST_DIR") {
        return dir.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("wasm32-wasip2").join("guest")
}

/// The path of a built guest component, e.g. `built_guest("rekon_guest_misbehaving")`.
///
/// # Panics
///
/// When the file does not exist, with a message saying to build the guests.
pub fn built_guest(stem: &str) -> PathBuf {
    let path = guest_dir().join(format!("{stem}.wasm"));
    assert!(
        path.is_file(),
        "{} does not exist: run `make guests` first (or set REKON_GUEST_DIR)",
        path.display()
    );
    path
}

/// A component built against an older contract version and checked in under
/// `tests/fixtures/v<version>/`, e.g. `contract_fixture("0.1.0", "rekon_guest_pvc_protection")`.
///
/// # Panics
///
/// When the file does not exist.
pub fn contract_fixture(version: &str, stem: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(format!("v{version}"))
        .join(format!("{stem}.wasm"));
    assert!(path.is_file(), "{} does not exist", path.display());
    path
}
