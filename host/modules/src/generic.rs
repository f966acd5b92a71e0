//! Controller modules (`rekon:reconcile/controller`) in the guests directory.
//! With a `controllers:` section in guests.yaml, exactly the modules it names
//! are served, each pinned by sha256 and by the scope it is allowed; without
//! one (a development directory), every `*.wasm` exporting the generic world
//! is, unpinned. Each is loaded (digest, the precompiled cache, the
//! instantiation check), asked to describe itself, its description checked
//! (and held against its pin), and served as a controller of its own. A module
//! that fails any step is refused with an error naming the file; the others
//! are served.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rekon_contract::ControllerWorld;
use rekon_controllers::decider::{Decider, Slot};
use rekon_controllers::generic::{ControllerModule, DescriptionError, check};
use rekon_runtime::{Limits, RuntimeError, World};

use crate::load::{LoadError, Loader};
use crate::refusal::{Refusal, RefusalReason};
use crate::source::{ModuleFile, SourceError, read_module};
use crate::version::ModuleVersion;

/// The export every controller module has (any contract version naming it).
const EXPORT: &[u8] = b"rekon:reconcile/controller-decider@";

/// Why one controller module is not served.
#[derive(Debug, thiserror::Error)]
pub enum ControllerModuleError {
    #[error(transparent)]
    Read(#[from] SourceError),
    #[error(transparent)]
    Load(Box<LoadError>),
    #[error("{path}: describe failed: {source}")]
    Describe {
        path: String,
        source: Box<RuntimeError>,
    },
    #[error("{path}: {source}")]
    Description {
        path: String,
        source: DescriptionError,
    },
    #[error("{path}: sha256 {found} is not the {pinned} pinned for controller {name:?}")]
    DigestMismatch {
        path: String,
        name: String,
        pinned: String,
        found: String,
    },
    #[error("{path}: describes controller {found:?}, but it is pinned as {name:?}")]
    WrongName {
        path: String,
        name: String,
        found: String,
    },
    /// The description asks for more than the pinned scope.
    #[error("{path}: ScopeNotAllowed: controller {name:?} asks for {} beyond the scope its pin allows", asked.join(", "))]
    ScopeNotAllowed {
        path: String,
        name: String,
        asked: Vec<String>,
    },
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("{path}: controller {name:?} is already served by {other}")]
    Duplicate {
        path: String,
        name: String,
        other: String,
    },
}

impl From<LoadError> for ControllerModuleError {
    fn from(err: LoadError) -> Self {
        ControllerModuleError::Load(Box::new(err))
    }
}

impl ControllerModuleError {
    /// As the refusal a `DecisionModule`'s status shows.
    pub fn refusal(&self) -> Refusal {
        let reason = match self {
            ControllerModuleError::Read(_) => RefusalReason::NotFound,
            ControllerModuleError::Load(err) => RefusalReason::of_load(err),
            ControllerModuleError::Describe { .. } => RefusalReason::InstantiationFailed,
            ControllerModuleError::Description { .. } => RefusalReason::InvalidDescription,
            ControllerModuleError::DigestMismatch { .. } => RefusalReason::DigestMismatch,
            ControllerModuleError::WrongName { .. } => RefusalReason::WrongController,
            ControllerModuleError::ScopeNotAllowed { .. } => RefusalReason::ScopeNotAllowed,
            ControllerModuleError::Config(_) => RefusalReason::InvalidSpec,
            ControllerModuleError::Duplicate { .. } => RefusalReason::DuplicateWorld,
        };
        Refusal::new(reason, self.to_string())
    }
}

/// A controller module loaded from a file (or an object's source).
pub struct LoadedController {
    pub path: PathBuf,
    /// The bytes it was loaded from.
    pub file: ModuleFile,
    /// The loaded version (digest, limits, contract) that decides.
    pub version: Arc<ModuleVersion>,
    pub module: ControllerModule,
}

/// What [`load_dir`] found in a guests directory.
pub struct DirModules {
    pub served: Vec<LoadedController>,
    pub refused: Vec<ControllerModuleError>,
    /// Every file it tried (served or refused); `None` when the directory or
    /// its guests.yaml could not be read (nothing can be told gone then).
    pub considered: Option<BTreeSet<PathBuf>>,
}

/// Whether `bytes` may be a controller module (its export name appears in it);
/// the load then checks it for real.
pub fn exports_controller(bytes: &[u8]) -> bool {
    bytes.windows(EXPORT.len()).any(|w| w == EXPORT)
}

/// What a `controllers:` entry or a `DecisionModule` pins: the name, the
/// digest (an object's source checked it already) and the scope.
pub struct Pin<'a> {
    pub name: &'a str,
    pub sha256: Option<&'a crate::ModuleDigest>,
    pub scope: rekon_contract::controller::Scope,
}

/// Loads one controller module from `path`, held against `pin` when given.
pub fn load_controller(
    loader: &Loader,
    limits: Limits,
    path: &Path,
    pin: Option<Pin<'_>>,
) -> Result<LoadedController, ControllerModuleError> {
    let file = read_module(path)?;
    load_file(loader, limits, &file, pin)
}

/// Loads one controller module from bytes read already, held against `pin`
/// when given: loaded, described, its name and scope checked against the pin,
/// its description checked.
pub fn load_file(
    loader: &Loader,
    limits: Limits,
    file: &ModuleFile,
    pin: Option<Pin<'_>>,
) -> Result<LoadedController, ControllerModuleError> {
    let shown = file.path.display().to_string();
    if let Some(pin) = &pin
        && let Some(pinned) = pin.sha256
        && &file.digest != pinned
    {
        return Err(ControllerModuleError::DigestMismatch {
            path: shown,
            name: pin.name.to_string(),
            pinned: pinned.to_string(),
            found: file.digest.to_string(),
        });
    }
    let version = Arc::new(loader.load(World::of::<ControllerWorld>(), limits, file)?);
    let description = version.guest().describe_controller().map_err(|source| {
        ControllerModuleError::Describe {
            path: shown.clone(),
            source: Box::new(source),
        }
    })?;
    if let Some(pin) = &pin {
        if description.name != pin.name {
            return Err(ControllerModuleError::WrongName {
                path: shown,
                name: pin.name.to_string(),
                found: description.name,
            });
        }
        let asked = rekon_controllers::generic::pin::beyond(&pin.scope, &description);
        if !asked.is_empty() {
            return Err(ControllerModuleError::ScopeNotAllowed {
                path: shown,
                name: description.name,
                asked,
            });
        }
    }
    let checked = check(description).map_err(|source| ControllerModuleError::Description {
        path: shown,
        source,
    })?;
    let decider: Arc<dyn Decider<ControllerWorld>> = version.clone();
    Ok(LoadedController {
        path: file.path.clone(),
        file: file.clone(),
        version,
        module: ControllerModule {
            checked: Arc::new(checked),
            slot: Arc::new(Slot::new(decider)),
            pinned: pin.is_some(),
        },
    })
}

/// Every controller module of `dir`: those guests.yaml pins, or without a
/// `controllers:` section every one found (by file name order); the refusals
/// beside. Two modules naming the same controller: the first serves, the
/// second is refused.
pub fn load_dir(loader: &Loader, limits: Limits, max_memory_mib: usize, dir: &Path) -> DirModules {
    let mut considered = BTreeSet::new();
    let mut served: BTreeMap<String, LoadedController> = BTreeMap::new();
    let mut refused = Vec::new();
    let mut serve = |result: Result<LoadedController, ControllerModuleError>,
                     path: &Path,
                     refused: &mut Vec<ControllerModuleError>| match result {
        Ok(loaded) => {
            let name = loaded.module.name().to_string();
            match served.get(&name) {
                Some(other) => refused.push(ControllerModuleError::Duplicate {
                    path: path.display().to_string(),
                    name,
                    other: other.path.display().to_string(),
                }),
                None => {
                    served.insert(name, loaded);
                }
            }
        }
        Err(err) => refused.push(err),
    };
    let config = match read_config(dir, max_memory_mib) {
        Ok(config) => config,
        Err(err) => {
            return DirModules {
                served: Vec::new(),
                refused: vec![err],
                considered: None,
            };
        }
    };
    if let Some(pinned) = config.as_ref().and_then(|c| c.controller_modules()) {
        for (name, entry) in pinned {
            let path = dir.join(&entry.module);
            let limits = entry.limits(limits);
            let pin = Pin {
                name,
                sha256: Some(&entry.sha256),
                scope: entry.scope.to_scope(),
            };
            let result = load_controller(loader, limits, &path, Some(pin));
            serve(result, &path, &mut refused);
            considered.insert(path);
        }
        return DirModules {
            served: served.into_values().collect(),
            refused,
            considered: Some(considered),
        };
    }
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
            .collect(),
        Err(_) => {
            return DirModules {
                served: Vec::new(),
                refused,
                considered: None,
            };
        }
    };
    paths.sort();
    for path in paths {
        // Only regular files are read: opening a FIFO named `*.wasm` would wait for a writer.
        let is_controller = std::fs::metadata(&path).is_ok_and(|m| m.is_file())
            && std::fs::read(&path).is_ok_and(|bytes| exports_controller(&bytes));
        if is_controller {
            let result = load_controller(loader, limits, &path, None);
            serve(result, &path, &mut refused);
            considered.insert(path);
        }
    }
    DirModules {
        served: served.into_values().collect(),
        refused,
        considered: Some(considered),
    }
}

/// guests.yaml of `dir`, if there is one.
fn read_config(
    dir: &Path,
    max_memory_mib: usize,
) -> Result<Option<crate::GuestsConfig>, ControllerModuleError> {
    let path = dir.join(crate::CONFIG_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let shown = path.display().to_string();
    Ok(Some(crate::GuestsConfig::parse(
        &shown,
        &text,
        max_memory_mib,
    )?))
}
