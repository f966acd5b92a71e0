//! The wasm runtime of the rekon host.
//!
//! One [`Engine`] per process; guests are loaded into [`GuestPre`]s (compiled,
//! checked for a supported world and contract version, resolved against the host
//! imports) and every decision runs in a fresh, limited store:
//!
//! ```no_run
//! use rekon_runtime::{Engine, EngineConfig, World};
//! use rekon_contract::{PvcProtectionWorld, model::PvcInput};
//!
//! let engine = Engine::new(EngineConfig::default())?;
//! let guest = engine
//!     .loader()
//!     .world(World::of::<PvcProtectionWorld>())
//!     .file("rekon_guest_pvc_protection.wasm")?;
//! let decision = guest.decide_pvc(PvcInput::default())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`testing::GuestHarness`] wraps this for guest authors' `cargo test`.

mod compat;
mod decide;
mod engine;
mod error;
mod guest;
mod id;
mod limits;
mod load;
mod progress;
mod state;
pub mod testing;
mod wasi_io;
mod world;

pub use decide::GuestWorld;
pub use engine::{Engine, EngineConfig, EngineError};
pub use error::{Failure, RuntimeError};
pub use guest::GuestPre;
pub use id::GuestId;
pub use limits::{EPOCH_TICK, Limits};
pub use load::{ComponentFile, GuestLoader, LoadError};
pub use state::{GUEST_LOG_BYTES, RESOURCE_TABLE_ENTRIES};
pub use world::{JsonDecisionError, World};
