//! Precompiled modules keyed by (module digest, engine compatibility hash): in
//! memory, and optionally in a directory so a restart skips compilation.
//! Memory keeps only what [`PrecompiledCache::retain`] is told serves or may
//! serve (active, shadow, rollback target); the directory keeps the rest.
//!
//! The directory must be private to rekon: wasmtime maps precompiled bytes as
//! executable code. Each file carries a sha256 sidecar so a torn or corrupted
//! write is noticed and recompiled rather than loaded.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest as _, Sha256};

use crate::digest::ModuleDigest;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cache directory {dir}: {source}")]
    Dir { dir: String, source: std::io::Error },
}

/// (module digest, engine compatibility hash).
type CacheKey = (ModuleDigest, String);

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

    pub fn get(&self, module: &ModuleDigest) -> Option<Arc<[u8]>> {
        let key = (module.clone(), self.engine.clone());
        if let Some(bytes) = self.memory.lock().unwrap().get(&key) {
            return Some(bytes.clone());
        }
        let bytes: Arc<[u8]> = self.read_file(module)?.into();
        self.memory.lock().unwrap().insert(key, bytes.clone());
        Some(bytes)
    }

    /// Stores precompiled bytes; a failed disk write is logged, never fatal.
    pub fn put(&self, module: &ModuleDigest, bytes: Arc<[u8]>) {
        if let Err(err) = self.write_file(module, &bytes) {
            tracing::warn!(module = %module.short(), error = %err, "could not write the precompiled cache");
        }
        self.memory
            .lock()
            .unwrap()
            .insert((module.clone(), self.engine.clone()), bytes);
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

    fn read_file(&self, module: &ModuleDigest) -> Option<Vec<u8>> {
        let path = self.path(module)?;
        let bytes = std::fs::read(&path).ok()?;
        let expected = std::fs::read_to_string(sidecar(&path)).ok()?;
        if hex::encode(Sha256::digest(&bytes)) == expected.trim() {
            Some(bytes)
        } else {
            tracing::warn!(path = %path.display(), "precompiled cache entry is corrupt; recompiling");
            None
        }
    }

    fn write_file(&self, module: &ModuleDigest, bytes: &[u8]) -> std::io::Result<()> {
        let Some(path) = self.path(module) else {
            return Ok(());
        };
        // Write-then-rename: readers see the old file or the whole new one. The
        // temporary name is the process's own: several rekon processes (tests,
        // a `rekon test` beside a `rekon run`) may share the directory.
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, &path)?;
        std::fs::write(sidecar(&path), hex::encode(Sha256::digest(bytes)))
    }
}

fn sidecar(path: &Path) -> PathBuf {
    path.with_extension("cwasm.sha256")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENGINE: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn entries_survive_a_restart_through_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let module = ModuleDigest::of(b"module");
        PrecompiledCache::new(ENGINE.into(), Some(dir.path()))
            .unwrap()
            .put(&module, Arc::from(&b"native code"[..]));
        let restarted = PrecompiledCache::new(ENGINE.into(), Some(dir.path())).unwrap();
        assert_eq!(restarted.get(&module).as_deref(), Some(&b"native code"[..]));

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
    fn retain_keeps_in_memory_only_what_is_named_and_the_directory_everything() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PrecompiledCache::new(ENGINE.into(), Some(dir.path())).unwrap();
        let (kept, dropped) = (ModuleDigest::of(b"kept"), ModuleDigest::of(b"dropped"));
        cache.put(&kept, Arc::from(&b"a"[..]));
        cache.put(&dropped, Arc::from(&b"b"[..]));
        cache.retain(std::slice::from_ref(&kept));
        assert_eq!(cache.in_memory(), 1);
        assert_eq!(
            cache.get(&dropped).as_deref(),
            Some(&b"b"[..]),
            "read back from disk"
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
