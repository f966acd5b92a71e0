//! The controller modules that serve, whichever source brings them (the
//! guests directory, `DecisionModule` objects), kept in the host's
//! [`ControllerSet`]: one version per controller name, an object's module
//! taking precedence over the directory's. A new version with the same
//! description is published into the module's slot (the host then decides
//! every primary key again); a new description, or a new pin, is a new
//! controller (the old one stops first).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use rekon_contract::controller::{Description, Scope};
use rekon_controllers::generic::serving::ControllerSet;
use rekon_runtime::Limits;

use crate::digest::ModuleDigest;
use crate::generic::{DirModules, LoadedController, Pin, load_file};
use crate::manager::Modules;
use crate::refusal::{Refusal, RefusalReason};
use crate::source::ModuleFile;
use crate::status::{ControllerStatus, VersionStatus};
use crate::version::ModuleVersion;

/// Where a controller module comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A file of the guests directory.
    Dir,
    /// The `DecisionModule` of this name.
    Object(String),
}

struct Entry {
    origin: Origin,
    version: Arc<ModuleVersion>,
    module: rekon_controllers::generic::ControllerModule,
    instance: u64,
    since: DateTime<Utc>,
    swaps: u64,
}

/// The controller a new description replaced.
#[derive(Debug, Clone)]
pub struct Replaced {
    /// The instance that runs until the host stopped it.
    pub instance: u64,
    pub description: Description,
}

/// What [`ControllerModules::offer`] did.
#[derive(Debug)]
pub enum Offered {
    /// The version serves already.
    Unchanged,
    /// A new controller, replacing `replaced` when one served under the name.
    Started { replaced: Option<Box<Replaced>> },
    /// A new version of the controller serving (same description).
    Published,
    /// A directory module for a name an object serves: not served.
    Overridden,
}

/// What one module of an object's plan serves, and what it replaced.
#[derive(Debug)]
pub struct Applied {
    pub offered: Offered,
    pub description: Description,
}

/// One controller module serving, as a `DecisionModule`'s status shows it.
#[derive(Debug, Clone)]
pub struct ServingModule {
    pub status: ControllerStatus,
    pub description: Description,
    pub instance: u64,
}

/// What a `DecisionModule` naming a controller module serves: the fetched
/// module (the serving one) and its previous version (checked, not served),
/// the limits and the scope the object pins.
pub struct ControllerModulePlan {
    pub name: String,
    pub serving: ModuleFile,
    pub previous: Option<ModuleFile>,
    pub limits: Limits,
    pub scope: Scope,
}

#[derive(Default)]
pub struct ControllerModules {
    set: ControllerSet,
    entries: Mutex<BTreeMap<String, Entry>>,
    /// Names an object serves (the guests directory stays off them), by object.
    claimed: Mutex<BTreeMap<String, String>>,
    /// The directory's refusals last reported (each is logged once).
    refused: Mutex<BTreeSet<String>>,
}

impl ControllerModules {
    pub fn set(&self) -> &ControllerSet {
        &self.set
    }

    /// Object `object` serves controller `name` from now on.
    pub fn claim(&self, name: &str, object: &str) {
        self.claimed
            .lock()
            .unwrap()
            .insert(name.to_string(), object.to_string());
    }

    /// No object serves `name` any more.
    pub fn unclaim(&self, name: &str) {
        self.claimed.lock().unwrap().remove(name);
    }

    /// Serves `loaded` from `origin`, unless it serves already or an object
    /// claims the name of a directory module.
    pub fn offer(&self, origin: Origin, loaded: LoadedController) -> Offered {
        let name = loaded.module.name().to_string();
        if origin == Origin::Dir && self.claimed.lock().unwrap().contains_key(&name) {
            return Offered::Overridden;
        }
        let mut entries = self.entries.lock().unwrap();
        if let Some(entry) = entries.get_mut(&name) {
            let same_controller = entry.origin == origin
                && entry.module.pinned == loaded.module.pinned
                && entry.module.checked.description == loaded.module.checked.description;
            if same_controller
                && entry.version.digest() == loaded.version.digest()
                && entry.version.limits() == loaded.version.limits()
            {
                return Offered::Unchanged;
            }
            if same_controller {
                entry.module.slot.swap(loaded.module.slot.current());
                entry.version = loaded.version;
                entry.since = Utc::now();
                entry.swaps += 1;
                self.set.published(&name);
                tracing::info!(controller = %name, module = %entry.version.path().display(),
                    sha256 = %entry.version.digest(), "new version of the controller module serves");
                return Offered::Published;
            }
        }
        let replaced = entries.remove(&name).map(|old| {
            Box::new(Replaced {
                instance: old.instance,
                description: old.module.checked.description.clone(),
            })
        });
        tracing::info!(controller = %name, module = %loaded.version.path().display(),
            sha256 = %loaded.version.digest(), primary = %loaded.module.checked.description.primary,
            restarted = replaced.is_some(), "controller module serves");
        let instance = self.set.serve(loaded.module.clone());
        entries.insert(
            name,
            Entry {
                origin,
                version: loaded.version,
                module: loaded.module,
                instance,
                since: Utc::now(),
                swaps: 1,
            },
        );
        Offered::Started { replaced }
    }

    /// Stops serving `name`; returns the instance and description that served.
    pub fn withdraw(&self, name: &str, reason: &str) -> Option<Replaced> {
        let entry = self.entries.lock().unwrap().remove(name)?;
        self.set.remove(name);
        tracing::warn!(controller = name, reason, "controller module withdrawn");
        Some(Replaced {
            instance: entry.instance,
            description: entry.module.checked.description.clone(),
        })
    }

    /// Serves what a read of the guests directory found; stops the directory's
    /// modules whose file went (or now holds another controller). Refusals are
    /// logged once each; what served keeps serving.
    pub fn dir_loaded(&self, found: DirModules) {
        let messages: BTreeSet<String> = found.refused.iter().map(ToString::to_string).collect();
        {
            let mut reported = self.refused.lock().unwrap();
            for message in messages.difference(&reported) {
                tracing::error!(error = %message, "controller module refused");
            }
            *reported = messages;
        }
        let served: BTreeMap<PathBuf, String> = found
            .served
            .iter()
            .map(|l| (l.path.clone(), l.module.name().to_string()))
            .collect();
        for loaded in found.served {
            self.offer(Origin::Dir, loaded);
        }
        let Some(considered) = found.considered else {
            return;
        };
        let gone: Vec<(String, PathBuf)> = self
            .entries
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, e)| e.origin == Origin::Dir)
            .map(|(name, e)| (name.clone(), e.version.path().to_path_buf()))
            .filter(|(name, path)| {
                !considered.contains(path) || served.get(path).is_some_and(|n| n != name)
            })
            .collect();
        for (name, path) in gone {
            let reason = format!(
                "{} is no longer a controller module of the guests directory",
                path.display()
            );
            self.withdraw(&name, &reason);
        }
    }

    /// The last refusals of the guests directory's controller modules.
    pub fn refusals(&self) -> Vec<String> {
        self.refused.lock().unwrap().iter().cloned().collect()
    }

    pub fn kept_digests(&self) -> Vec<ModuleDigest> {
        self.entries
            .lock()
            .unwrap()
            .values()
            .map(|e| e.version.digest().clone())
            .collect()
    }

    pub fn serving(&self, name: &str) -> Option<ServingModule> {
        let entries = self.entries.lock().unwrap();
        let entry = entries.get(name)?;
        Some(ServingModule {
            status: status(entry),
            description: entry.module.checked.description.clone(),
            instance: entry.instance,
        })
    }

    /// The status of every controller module serving, by name.
    pub fn status(&self) -> BTreeMap<String, ControllerStatus> {
        self.entries
            .lock()
            .unwrap()
            .iter()
            .map(|(name, e)| (name.clone(), status(e)))
            .collect()
    }
}

fn status(entry: &Entry) -> ControllerStatus {
    let version = &entry.version;
    ControllerStatus {
        active: Some(VersionStatus {
            name: version.id().name().to_string(),
            sha256: version.digest().to_string(),
            path: version.path().display().to_string(),
            contract: version.contract(),
        }),
        active_since: Some(entry.since),
        pinned: entry.module.pinned,
        swaps: entry.swaps,
        ..ControllerStatus::default()
    }
}

impl Modules {
    /// The controller modules to run, for the host: kept current by
    /// [`Modules::reload`] and the `DecisionModule` objects.
    pub fn controller_set(&self) -> ControllerSet {
        self.controller_modules().set().clone()
    }

    /// Loads and checks `plan`'s modules off the reconcile path (the serving
    /// one and its previous version must both describe controller
    /// `plan.name` within the pinned scope), then serves the serving one for
    /// object `object`. A refusal leaves what served serving.
    pub async fn apply_controller(
        &self,
        object: &str,
        plan: ControllerModulePlan,
    ) -> Result<Applied, Refusal> {
        let ControllerModulePlan {
            name,
            serving,
            previous,
            limits,
            scope,
        } = plan;
        let modules = self.clone();
        let loaded = tokio::task::spawn_blocking(move || {
            let load = |file: &ModuleFile| {
                let pin = Pin {
                    name: &name,
                    sha256: None,
                    scope: scope.clone(),
                };
                load_file(modules.loader(), limits, file, Some(pin)).map_err(|e| e.refusal())
            };
            if let Some(previous) = &previous {
                load(previous)
                    .map_err(|r| Refusal::new(r.reason, format!("spec.previous: {r}")))?;
            }
            load(&serving)
        })
        .await
        .map_err(|panic| {
            Refusal::new(
                RefusalReason::Internal,
                format!("loading the controller module panicked: {panic}"),
            )
        })??;
        let description = loaded.module.checked.description.clone();
        let offered = self
            .controller_modules()
            .offer(Origin::Object(object.to_string()), loaded);
        self.retain_cache();
        self.refresh_status();
        Ok(Applied {
            offered,
            description,
        })
    }

    /// Object `object` serves controller `name` from now on: the guests
    /// directory no longer changes it.
    pub fn claim_controller(&self, name: &str, object: &str) {
        self.controller_modules().claim(name, object);
    }

    /// Controller `name` stops (`reason` says why); returns what served.
    pub fn withdraw_controller(&self, name: &str, reason: &str) -> Option<Replaced> {
        let withdrawn = self.controller_modules().withdraw(name, reason);
        self.retain_cache();
        self.refresh_status();
        withdrawn
    }

    /// No object serves controller `name` any more: it stops, and the guests
    /// directory serves it again if it has it.
    pub async fn release_controller(&self, name: &str, reason: &str) {
        self.controller_modules().unclaim(name);
        self.withdraw_controller(name, reason);
        if self.dir().is_some() {
            self.reload().await;
        }
    }

    /// What serves controller `name` now.
    pub fn serving_controller(&self, name: &str) -> Option<ServingModule> {
        self.controller_modules().serving(name)
    }
}
