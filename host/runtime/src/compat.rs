//! Compatibility: which precompiled code this engine can load (a stable name for
//! caches), and the host imports of the older contract versions it still serves.

use std::hash::{Hash, Hasher};

use rekon_contract::bindings::v0_1_0;
use rekon_contract::controller::v0_3_0;
use rekon_contract::current::log;
use sha2::{Digest, Sha256};
use wasmtime::component::{HasSelf, Linker};

use crate::engine::Engine;
use crate::state::DecisionState;

/// Adds the `log` import of every other supported version (0.2.0's is linked
/// with WASI): a 0.1.0 guest imports `rekon:reconcile/log@0.1.0`, a controller
/// module `rekon:reconcile/log@0.3.0`.
pub(crate) fn add_old_imports(linker: &mut Linker<DecisionState>) -> wasmtime::Result<()> {
    v0_1_0::log::add_to_linker::<DecisionState, HasSelf<DecisionState>>(linker, |state| state)?;
    v0_3_0::log::add_to_linker::<DecisionState, HasSelf<DecisionState>>(linker, |state| state)
}

/// The controller world's `log` (0.3.0) is the same call as 0.2.0's.
impl v0_3_0::log::Host for DecisionState {
    fn log(&mut self, level: v0_3_0::log::Level, message: String) {
        let level = match level {
            v0_3_0::log::Level::Debug => log::Level::Debug,
            v0_3_0::log::Level::Info => log::Level::Info,
            v0_3_0::log::Level::Warn => log::Level::Warn,
        };
        log::Host::log(self, level, message);
    }
}

impl v0_1_0::log::Host for DecisionState {
    fn log(&mut self, level: v0_1_0::log::Level, message: String) {
        let level = match level {
            v0_1_0::log::Level::Debug => log::Level::Debug,
            v0_1_0::log::Level::Info => log::Level::Info,
            v0_1_0::log::Level::Warn => log::Level::Warn,
        };
        log::Host::log(self, level, message);
    }
}

impl Engine {
    /// A hex digest of everything that decides whether code precompiled by one
    /// engine loads in another (wasmtime version, target, CPU features, engine
    /// settings). Two engines with the same hash can share precompiled bytes, so
    /// caches key their entries by it.
    pub fn compatibility_hash(&self) -> String {
        let mut hasher = Sha256Hasher(Sha256::new());
        self.wasmtime()
            .precompile_compatibility_hash()
            .hash(&mut hasher);
        hex::encode(hasher.0.finalize())
    }
}

/// Feeds `Hash` into sha256: unlike `DefaultHasher`, stable across Rust
/// releases, so an on-disk cache survives a rebuild of rekon.
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        u64::from_le_bytes(digest[..8].try_into().expect("sha256 has 32 bytes"))
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

#[cfg(test)]
mod tests {
    use crate::{Engine, EngineConfig};

    #[test]
    fn equal_configs_share_a_hash_and_it_is_hex_sha256() {
        let config = || EngineConfig {
            max_concurrent_decisions: 2,
            ..EngineConfig::default()
        };
        let a = Engine::new(config()).unwrap().compatibility_hash();
        let b = Engine::new(config()).unwrap().compatibility_hash();
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    }
}
