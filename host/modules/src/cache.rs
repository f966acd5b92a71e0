//! Precompiled modules keyed by (module digest, engine compatibility hash): in
//! a directory, so a restart skips compilation, or in memory when there is no
//! directory. A module loads from the directory's file mapped, not copied: the
//! code is shared with the page cache and only the pages that run are resident,
//! where bytes held in memory would cost the whole module twice (its copy here
//! and the engine's). Memory keeps only what [`PrecompiledCache::retain`] is told
//! serves or may serve (active, shadow, rollback target).
//!
//! The directory must be private to rekon (`rekon` creates it 0700): wasmtime
//! maps precompiled bytes as executable code, and a file is checked before it
//! is mapped, so only rekon's own user could change it in between. Each file
//! carries a sha256 sidecar so a torn or corrupted write is noticed and
//! recompiled rather than loaded.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rekon_runtime::{GuestId, GuestLoader, GuestPre};
use sha2::{Digest as _, Sha256};

use crate::digest::ModuleDigest;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cache directory {dir}: {source}")]
    Dir { dir: String, source: std::io::Error },
}

/// (module digest, engine compatibility hash).
type CacheKey = (ModuleDigest, String);

/// A precompiled module, where the cache holds it.
#[derive(Debug, Clone)]
pub enum Precompiled {
    /// In memory (a cache without a directory, or one whose file could not be written).
    Memory(Arc<[u8]>),
    /// A file of the cache directory, checked against its sidecar.
    File(PathBuf),
}

impl Precompiled {
    /// Loads the module with `loader`; the guest is `id`, named `origin` in errors.
    ///
    /// # Safety
    ///
    /// The bytes or file must come from `Engine::precompile` of an engine with
    /// the loader's compatibility hash (what this cache holds).
    pub unsafe fn load(
        &self,
        loader: GuestLoader<'_>,
        origin: &str,
        id: GuestId,
    ) -> Result<GuestPre, rekon_runtime::LoadError> {
        // SAFETY: as the caller vouches.
        unsafe {
            match self {
                Precompiled::Memory(bytes) => loader.id(id).precompiled(origin, bytes),
                Precompiled::File(path) => loader.precompiled_file(origin, id, path),
            }
        }
    }
}

pub struct PrecompiledCache {
    /// The engine's compatibility hash: bytes precompiled under another never match.
    engine: String,
    memory: Mutex<HashMap<CacheKey, Arc<[u8]>>>,
    dir: Option<PathBuf>,
}

impl PrecompiledCache {
    /// A cache for the engine whose compatibility hash is `engine`; `dir` adds
    /// an on-disk layer (created if missing).
    pub fn new(engine: String, dir: Option<&Path>) -> Result<Self, CacheError> {
        if let Some(dir) = dir {
            std::fs::create_dir_all(dir).map_err(|source| CacheError::Dir {
                dir: dir.display().to_string(),
                source,
            })?;
        }
        Ok(Self {
            engine,
            memory: Mutex::new(HashMap::new()),
            dir: dir.map(Path::to_path_buf),
        })
    }

    pub fn get(&self, module: &ModuleDigest) -> Option<Precompiled> {
        let key = (module.clone(), self.engine.clone());
        if let Some(bytes) = self.memory.lock().unwrap().get(&key) {
            return Some(Precompiled::Memory(bytes.clone()));
        }
        self.checked_file(module).map(Precompiled::File)
    }

    /// Stores precompiled bytes and says where they are now: in the directory
    /// when there is one (a failed write is logged and the bytes kept in memory).
    pub fn put(&self, module: &ModuleDigest, bytes: Arc<[u8]>) -> Precompiled {
        match self.write_file(module, &bytes) {
            Ok(Some(path)) => return Precompiled::File(path),
            Ok(None) => {}
            Err(err) => {
                tracing::warn!(module = %module.short(), error = %err, "could not write the precompiled cache");
            }
        }
        self.memory
            .lock()
            .unwrap()
            .insert((module.clone(), self.engine.clone()), bytes.clone());
        Precompiled::Memory(bytes)
    }

    /// Forgets an entry whose bytes did not load.
    pub fn evict(&self, module: &ModuleDigest) {
        self.memory
            .lock()
            .unwrap()
            .remove(&(module.clone(), self.engine.clone()));
        if let Some(path) = self.path(module) {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(sidecar(&path));
        }
    }

    /// Forgets from memory every entry not in `keep` (the directory keeps them).
    pub fn retain(&self, keep: &[ModuleDigest]) {
        self.memory
            .lock()
            .unwrap()
            .retain(|(module, _), _| keep.contains(module));
    }

    /// How many entries memory holds.
    pub fn in_memory(&self) -> usize {
        self.memory.lock().unwrap().len()
    }

    fn path(&self, module: &ModuleDigest) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{}-{}.cwasm", module.hex(), &self.engine[..16])))
    }

    /// The directory's file for `module` if its contents match their sidecar.
    fn checked_file(&self, module: &ModuleDigest) -> Option<PathBuf> {
        let path = self.path(module)?;
        let bytes = std::fs::read(&path).ok()?;
        let expected = std::fs::read_to_string(sidecar(&path)).ok()?;
        if hex::encode(Sha256::digest(&bytes)) == expected.trim() {
            Some(path)
        } else {
            tracing::warn!(path = %path.display(), "precompiled cache entry is corrupt; recompiling");
            None
        }
    }

    fn write_file(&self, module: &ModuleDigest, bytes: &[u8]) -> std::io::Result<Option<PathBuf>> {
        let Some(path) = self.path(module) else {
            return Ok(None);
        };
        // Write-then-rename: readers see the old file or the whole new one, and a
        // module mapped from the old file keeps it. The temporary name is the
        // process's own: several rekon processes (tests, a `rekon test` beside a
        // `rekon run`) may share the directory.
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::write(sidecar(&path), hex::encode(Sha256::digest(bytes)))?;
        std::fs::rename(&tmp, &path)?;
        Ok(Some(path))
    }
}

fn sidecar(path: &Path) -> PathBuf {
    path.with_extension("cwasm.sha256")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENGINE: &str = "0123456789abcdef0123456789abcdef";

    /// What a cache entry holds, wherever it is.
    fn contents(entry: Option<Precompiled>) -> Option<Vec<u8>> {
        match entry? {
            Precompiled::Memory(bytes) => Some(bytes.to_vec()),
            Precompiled::File(path) => Some(std::fs::read(path).unwrap()),
        }
    }

    #[test]
    fn entries_survive_a_restart_through_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let module = ModuleDigest::of(b"module");
        let put = PrecompiledCache::new(ENGINE.into(), Some(dir.path()))
            .unwrap()
            .put(&module, Arc::from(&b"native code"[..]));
        assert!(
            matches!(put, Precompiled::File(_)),
            "with a directory, loaded mapped from its file"
        );
        let restarted = PrecompiledCache::new(ENGINE.into(), Some(dir.path())).unwrap();
        assert_eq!(
            contents(restarted.get(&module)).as_deref(),
            Some(&b"native code"[..])
        );

        let other_engine = PrecompiledCache::new("f".repeat(32), Some(dir.path())).unwrap();
        assert!(
            other_engine.get(&module).is_none(),
            "keyed by engine compatibility"
        );
    }

    #[test]
    fn a_corrupted_file_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let module = ModuleDigest::of(b"module");
        let cache = PrecompiledCache::new(ENGINE.into(), Some(dir.path())).unwrap();
        cache.put(&module, Arc::from(&b"native code"[..]));
        let path = cache.path(&module).unwrap();
        std::fs::write(&path, b"native cod").unwrap();
        let restarted = PrecompiledCache::new(ENGINE.into(), Some(dir.path())).unwrap();
        assert!(restarted.get(&module).is_none());
    }

    #[test]
    fn without_a_directory_memory_keeps_only_what_retain_names() {
        let cache = PrecompiledCache::new(ENGINE.into(), None).unwrap();
        let (kept, dropped) = (ModuleDigest::of(b"kept"), ModuleDigest::of(b"dropped"));
        assert!(matches!(
            cache.put(&kept, Arc::from(&b"a"[..])),
            Precompiled::Memory(_)
        ));
        cache.put(&dropped, Arc::from(&b"b"[..]));
        cache.retain(std::slice::from_ref(&kept));
        assert_eq!(cache.in_memory(), 1);
        assert_eq!(contents(cache.get(&kept)).as_deref(), Some(&b"a"[..]));
        assert!(cache.get(&dropped).is_none());
    }

    #[test]
    fn with_a_directory_nothing_is_held_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PrecompiledCache::new(ENGINE.into(), Some(dir.path())).unwrap();
        let module = ModuleDigest::of(b"module");
        cache.put(&module, Arc::from(&b"native code"[..]));
        assert_eq!(cache.in_memory(), 0);
        assert_eq!(
            contents(cache.get(&module)).as_deref(),
            Some(&b"native code"[..])
        );
    }

    #[test]
    fn evicted_entries_are_gone_from_memory_and_disk() {
        let dir = tempfile::tempdir().unwrap();
        let module = ModuleDigest::of(b"module");
        let cache = PrecompiledCache::new(ENGINE.into(), Some(dir.path())).unwrap();
        cache.put(&module, Arc::from(&b"native code"[..]));
        cache.evict(&module);
        assert!(cache.get(&module).is_none());
        assert!(!cache.path(&module).unwrap().exists());
    }
}
