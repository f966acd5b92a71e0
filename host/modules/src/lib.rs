//! Decision modules in production: which version of each controller's module
//! serves, and how a new one gets there safely.
//!
//! - [`config`]: `guests.yaml` in the guests directory pins each module by sha256,
//!   with limits, mode (active, shadow, rollback), a shadow candidate, the
//!   previous version and the automatic rollback policy.
//! - [`Modules::reload`]: read the directory (one generation of a mounted
//!   ConfigMap), verify digests before compiling, compile off the reconcile path
//!   through a precompiled cache, check world, contract version and
//!   instantiation, replay recent inputs (canary), and only then publish through
//!   the controllers' [`Slot`](rekon_controllers::decider::Slot). Anything that
//!   fails is refused and reported; the old version keeps serving.
//! - [`Modules::watch`]: reload on directory changes and periodically.
//! - Shadow evaluation counts agreements and differences; automatic rollback
//!   republishes the previous version when the active one fails too often.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use rekon_modules::{Modules, ModulesOptions, WatchOptions};
//!
//! let modules = Modules::open(ModulesOptions::new("/etc/rekon/guests")).await?;
//! let _watching = modules.watch(WatchOptions::default())?;
//! let deciders = modules.deciders(); // one slot per world
//! // HostConfig::new(deciders, journal, observer)
//! # Ok(()) }
//! ```

mod cache;
mod canary;
pub mod config;
mod controller;
mod controller_modules;
mod digest;
pub mod generic;
mod load;
mod manager;
pub mod object;
mod observe;
mod refusal;
mod report;
mod served;
mod source;
mod status;
pub mod testing;
mod version;
mod watch;

pub use cache::{CacheError, Precompiled, PrecompiledCache};
pub use canary::CanaryFailure;
pub use config::{AutoPromote, AutoRollback, CONFIG_FILE, ConfigError, GuestsConfig, Mode};
pub use controller_modules::{
    Applied, ControllerModulePlan, Offered, Origin, Replaced, ServingModule,
};
pub use digest::{DigestError, ModuleDigest};
pub use load::{LoadError, Loader};
pub use manager::{Change, Modules, ModulesError, ModulesOptions, ReloadReport};
pub use observe::{ModulesObserver, NoModulesObserver};
pub use refusal::{Refusal, RefusalReason};
pub use report::{EventTarget, ModuleEvent};
pub use source::{ControllerPlan, ModuleFile, SourceError, conventional_names};
pub use status::{ControllerStatus, Promotion, Status, VersionStatus};
pub use version::ModuleVersion;
pub use watch::{WatchError, WatchOptions, Watching};
