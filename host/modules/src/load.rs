//! From verified module bytes to a checked [`ModuleVersion`]: precompile (or
//! take the cached precompiled form), deserialize, check world and contract
//! version, and instantiate once. Blocking: callers run it off the reconcile
//! path (`spawn_blocking`).

use rekon_runtime::{Engine, GuestId, GuestPre, Limits, RuntimeError, World};

use crate::cache::{Precompiled, PrecompiledCache};
use crate::source::ModuleFile;
use crate::version::ModuleVersion;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Not a component, wrong world, unsupported contract version, cannot link...
    #[error(transparent)]
    Check(#[from] rekon_runtime::LoadError),
    #[error("{path}: cannot be compiled: {message}")]
    Compile { path: String, message: String },
    #[error("{path}: failed its instantiation check: {source}")]
    Unhealthy {
        path: String,
        source: Box<RuntimeError>,
    },
}

/// Loads modules into one engine through one precompiled cache.
pub struct Loader {
    engine: Engine,
    cache: PrecompiledCache,
}

impl Loader {
    pub fn new(engine: Engine, cache: PrecompiledCache) -> Self {
        Self { engine, cache }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn cache(&self) -> &PrecompiledCache {
        &self.cache
    }

    /// Loads `file` as a `world` module with `limits`.
    pub fn load(
        &self,
        world: World,
        limits: Limits,
        file: &ModuleFile,
    ) -> Result<ModuleVersion, LoadError> {
        let guest = match self.cache.get(&file.digest) {
            Some(cached) => match self.deserialize(world, limits, file, cached) {
                Ok(guest) => guest,
                // Bytes that do not deserialize are a cache problem, not the module's.
                Err(LoadError::Check(rekon_runtime::LoadError::Compile { .. })) => {
                    tracing::warn!(module = %file.path.display(), "cached precompiled module did not load; recompiling");
                    self.cache.evict(&file.digest);
                    self.compile(world, limits, file)?
                }
                Err(err) => return Err(err),
            },
            None => self.compile(world, limits, file)?,
        };
        let version = ModuleVersion::new(
            GuestId::of(&file.name, &file.bytes),
            file.path.clone(),
            guest,
        );
        version
            .guest()
            .instantiate()
            .map_err(|source| LoadError::Unhealthy {
                path: file.path.display().to_string(),
                source: Box::new(source),
            })?;
        Ok(version)
    }

    fn compile(
        &self,
        world: World,
        limits: Limits,
        file: &ModuleFile,
    ) -> Result<GuestPre, LoadError> {
        match self.engine.precompile(&origin(file), &file.bytes) {
            Ok(precompiled) => {
                let stored = self.cache.put(&file.digest, precompiled.into());
                self.deserialize(world, limits, file, stored)
            }
            // The loader's own compile tells apart core modules, .cwasm files and
            // plain garbage; only its error says what is wrong.
            Err(err) => match self
                .engine
                .loader()
                .world(world)
                .limits(limits)
                .bytes(&origin(file), &file.bytes)
            {
                Err(check) => Err(LoadError::Check(check)),
                Ok(_) => Err(LoadError::Compile {
                    path: file.path.display().to_string(),
                    message: err.to_string(),
                }),
            },
        }
    }

    fn deserialize(
        &self,
        world: World,
        limits: Limits,
        file: &ModuleFile,
        precompiled: Precompiled,
    ) -> Result<GuestPre, LoadError> {
        let loader = self.engine.loader().world(world).limits(limits);
        let id = GuestId::of(&file.name, &file.bytes);
        // SAFETY: the bytes come from `Engine::precompile` of this engine, in
        // memory or through the private cache directory whose files are
        // checked against their sha256 sidecar.
        Ok(unsafe { precompiled.load(loader, &origin(file), id) }?)
    }
}

/// What the runtime's errors name the module by: its path. (The version's own
/// [`GuestId`] carries the guest name and the digest of the module bytes.)
fn origin(file: &ModuleFile) -> String {
    file.path.display().to_string()
}
