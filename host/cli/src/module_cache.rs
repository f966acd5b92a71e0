//! The precompiled-module cache of every command (`run`, `simulate`, `test`,
//! `eval`, `diff`): each module digest compiles once per machine.
//!
//! Where it lives: `--cache-dir`, else `$REKON_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/rekon`, else `$HOME/.cache/rekon`. `--no-cache` compiles
//! afresh and writes nothing. A default directory that cannot be created only
//! costs a warning (the module is compiled and kept in memory); one given
//! explicitly is an error.
//!
//! The directory must be private to rekon: wasmtime maps what it reads there as
//! executable code (each entry is checked against its sha256 sidecar).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use rekon_modules::{ModuleDigest, PrecompiledCache};
use rekon_runtime::{ComponentFile, Engine, GuestId, GuestLoader, GuestPre, LoadError};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct CacheArgs {
    /// Keep precompiled modules here (a directory private to rekon). Default:
    /// $XDG_CACHE_HOME/rekon, else $HOME/.cache/rekon.
    #[arg(long, env = "REKON_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile every module afresh and keep nothing on disk.
    #[arg(long)]
    pub no_cache: bool,
}

impl CacheArgs {
    /// The directory to use, created if missing; `None` with `--no-cache` or
    /// when the default directory cannot be created.
    pub fn dir(&self) -> anyhow::Result<Option<PathBuf>> {
        if self.no_cache {
            return Ok(None);
        }
        if let Some(dir) = &self.cache_dir {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cache directory {}: cannot create", dir.display()))?;
            return Ok(Some(dir.clone()));
        }
        let Some(dir) = default_dir() else {
            return Ok(None);
        };
        match private_dir(&dir) {
            Ok(()) => Ok(Some(dir)),
            Err(err) => {
                tracing::warn!(dir = %dir.display(), error = %err, "cannot create the default precompiled cache; modules compile on every start");
                Ok(None)
            }
        }
    }

    /// The cache for `engine`'s precompiled code (memory only without a directory).
    pub fn open(&self, engine: &Engine) -> anyhow::Result<PrecompiledCache> {
        Ok(PrecompiledCache::new(
            engine.compatibility_hash(),
            self.dir()?.as_deref(),
        )?)
    }
}

/// Creates `dir` (and its parents) readable by its owner only.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// `$XDG_CACHE_HOME/rekon`, else `$HOME/.cache/rekon`.
fn default_dir() -> Option<PathBuf> {
    let non_empty = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    non_empty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|home| Path::new(&home).join(".cache")))
        .map(|base| base.join("rekon"))
}

/// Loads the component at `path` through `cache`: its precompiled form when the
/// cache has one for these bytes, else compiled once and stored. `loader`
/// makes the loader (world, limits) to use; the guest is named after the file
/// and the digest of the component, as an uncached load names it.
pub fn load_file<'e>(
    cache: &PrecompiledCache,
    engine: &'e Engine,
    loader: impl Fn() -> GuestLoader<'e>,
    path: &Path,
) -> Result<GuestPre, LoadError> {
    let ComponentFile {
        origin,
        name,
        bytes,
    } = ComponentFile::read(path)?;
    load_bytes(cache, engine, loader, &origin, name, &bytes)
}

/// [`load_file`] for bytes from elsewhere (a registry): `origin` names them in
/// errors and logs, `name` is the guest's name.
pub fn load_bytes<'e>(
    cache: &PrecompiledCache,
    engine: &'e Engine,
    loader: impl Fn() -> GuestLoader<'e>,
    origin: &str,
    name: String,
    bytes: &[u8],
) -> Result<GuestPre, LoadError> {
    let id = GuestId::of(name, bytes);
    let digest: ModuleDigest = id
        .digest()
        .parse()
        .expect("a guest id holds a sha256 digest");
    if let Some(cached) = cache.get(&digest) {
        // SAFETY: the cache holds only bytes from `Engine::precompile` of an
        // engine with this compatibility hash, checked against their sidecar.
        match unsafe { cached.load(loader(), origin, id.clone()) } {
            Err(LoadError::Compile { .. }) => {
                tracing::warn!(module = %origin, "cached precompiled module did not load; recompiling");
                cache.evict(&digest);
            }
            loaded => return loaded,
        }
    }
    match engine.precompile(origin, bytes) {
        Ok(precompiled) => {
            let stored = cache.put(&digest, precompiled.into());
            // SAFETY: just precompiled by this engine.
            unsafe { stored.load(loader(), origin, id) }
        }
        // The loader tells apart core modules, .cwasm files and garbage.
        Err(_) => loader().id(id).bytes(origin, bytes),
    }
}
