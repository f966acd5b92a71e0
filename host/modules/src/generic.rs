//! Controller modules (`rekon:reconcile/controller`) in the guests directory:
//! every `*.wasm` that exports the generic world is loaded (digest, the
//! precompiled cache, the instantiation check), asked to describe itself, its
//! description checked, and served as a controller of its own. A module that
//! fails any step is refused with an error naming the file; the others are served.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rekon_contract::ControllerWorld;
use rekon_controllers::decider::{Decider, Slot};
use rekon_controllers::generic::{ControllerModule, DescriptionError, check};
use rekon_runtime::{Limits, RuntimeError, World};

use crate::load::{LoadError, Loader};
use crate::source::{SourceError, read_module};

/// The export every controller module has (any contract version naming it).
const EXPORT: &[u8] = b"rekon:reconcile/controller@";

/// Why one controller module is not served.
#[derive(Debug, thiserror::Error)]
pub enum ControllerModuleError {
    #[error(transparent)]
    Read(#[from] SourceError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{path}: describe failed: {source}")]
    Describe { path: String, source: RuntimeError },
    #[error("{path}: {source}")]
    Description {
        path: String,
        source: DescriptionError,
    },
    #[error("{path}: controller {name:?} is already served by {other}")]
    Duplicate {
        path: String,
        name: String,
        other: String,
    },
}

/// A controller module loaded from a file.
pub struct LoadedController {
    pub path: PathBuf,
    pub module: ControllerModule,
}

/// Whether `bytes` may be a controller module (its export name appears in it);
/// the load then checks it for real.
pub fn exports_controller(bytes: &[u8]) -> bool {
    bytes.windows(EXPORT.len()).any(|w| w == EXPORT)
}

/// Loads one controller module from `path`.
pub fn load_controller(
    loader: &Loader,
    limits: Limits,
    path: &Path,
) -> Result<LoadedController, ControllerModuleError> {
    let file = read_module(path)?;
    let version = loader.load(World::of::<ControllerWorld>(), limits, &file)?;
    let shown = path.display().to_string();
    let description = version
        .guest()
        .describe_controller()
        .map_err(|source| ControllerModuleError::Describe {
            path: shown.clone(),
            source,
        })?;
    let checked = check(description).map_err(|source| ControllerModuleError::Description {
        path: shown,
        source,
    })?;
    let decider: Arc<dyn Decider<ControllerWorld>> = Arc::new(version);
    Ok(LoadedController {
        path: path.to_path_buf(),
        module: ControllerModule {
            checked: Arc::new(checked),
            slot: Arc::new(Slot::new(decider)),
        },
    })
}

/// Every controller module of `dir`, by file name order; the refusals beside.
/// Two modules naming the same controller: the first file serves, the second
/// is refused.
pub fn load_dir(
    loader: &Loader,
    limits: Limits,
    dir: &Path,
) -> (Vec<LoadedController>, Vec<ControllerModuleError>) {
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
            .collect(),
        Err(_) => Vec::new(),
    };
    paths.sort();
    let mut served: BTreeMap<String, LoadedController> = BTreeMap::new();
    let mut refused = Vec::new();
    for path in paths {
        let is_controller = std::fs::read(&path).is_ok_and(|bytes| exports_controller(&bytes));
        if !is_controller {
            continue;
        }
        match load_controller(loader, limits, &path) {
            Ok(loaded) => {
                let name = loaded.module.name().to_string();
                if let Some(other) = served.get(&name) {
                    refused.push(ControllerModuleError::Duplicate {
                        path: path.display().to_string(),
                        name,
                        other: other.path.display().to_string(),
                    });
                } else {
                    served.insert(name, loaded);
                }
            }
            Err(err) => refused.push(err),
        }
    }
    (served.into_values().collect(), refused)
}
