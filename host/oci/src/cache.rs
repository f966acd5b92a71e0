//! The on-disk cache, a content store in containerd's manner: every manifest
//! and every wasm layer is a blob named by its sha256 (`blobs/sha256/<hex>`)
//! and re-hashed on every read, so a record that changed on disk is dropped
//! (and the module pulled again), never served. Two small records hold what a
//! blob cannot: which key verified a manifest's signature
//! (`verified/<sha256 of digest and key>`, holding both, compared on read) and,
//! for tag pulls, the manifest a reference resolved to last (`refs/<sha256 of
//! the reference>.json`, holding the reference, compared on read).
//!
//! The blobs are bounded by bytes: after each write the least recently used
//! blobs (by modification time, which every read refreshes) are removed until
//! the total is within the bound. Writes go to a temporary file renamed into
//! place, so a reader never sees half a file.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::error::OciError;
use crate::layout::sha256_digest;

/// The default bound on the blobs' bytes: 512 MiB.
pub const DEFAULT_CACHE_MAX_BYTES: u64 = 512 * 1024 * 1024;

pub(crate) struct Cache {
    dir: PathBuf,
    max_bytes: u64,
}

/// The last manifest a tag reference resolved to.
#[derive(Serialize, Deserialize)]
struct RefRecord {
    reference: String,
    manifest: String,
}

impl Cache {
    pub(crate) fn open(dir: &Path, max_bytes: u64) -> Result<Self, OciError> {
        for sub in ["blobs/sha256", "verified", "refs"] {
            let path = dir.join(sub);
            std::fs::create_dir_all(&path).map_err(|source| cache_error(&path, source))?;
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            max_bytes,
        })
    }

    /// Where the blob `digest` (`sha256:<hex>`) lives.
    pub(crate) fn blob_path(&self, digest: &str) -> PathBuf {
        self.dir.join("blobs/sha256").join(hex_of(digest))
    }

    /// The bytes of `digest`, if present and intact (a corrupt file is
    /// removed). A hit counts as a use for eviction.
    pub(crate) fn blob(&self, digest: &str) -> Option<Vec<u8>> {
        let path = self.blob_path(digest);
        let bytes = std::fs::read(&path).ok()?;
        if sha256_digest(&bytes) != digest {
            tracing::warn!(path = %path.display(), expected = digest, "OCI cache record does not match its digest; dropped, pulling again");
            let _ = std::fs::remove_file(&path);
            return None;
        }
        if let Ok(file) = std::fs::File::options().append(true).open(&path) {
            let _ = file.set_modified(SystemTime::now());
        }
        Some(bytes)
    }

    /// Stores `bytes` under `digest` (which the caller computed from them) and
    /// evicts the least recently used blobs over the bound.
    pub(crate) fn put_blob(&self, digest: &str, bytes: &[u8]) -> Result<PathBuf, OciError> {
        debug_assert_eq!(sha256_digest(bytes), digest);
        let path = self.blob_path(digest);
        write_atomically(&path, bytes)?;
        self.evict(&path);
        Ok(path)
    }

    /// Whether the signature of manifest `digest` verified with the key of `fingerprint`.
    pub(crate) fn verified(&self, digest: &str, fingerprint: &str) -> bool {
        let (path, content) = self.verified_record(digest, fingerprint);
        std::fs::read(&path).is_ok_and(|bytes| bytes == content.as_bytes())
    }

    pub(crate) fn put_verified(&self, digest: &str, fingerprint: &str) -> Result<(), OciError> {
        let (path, content) = self.verified_record(digest, fingerprint);
        write_atomically(&path, content.as_bytes())
    }

    fn verified_record(&self, digest: &str, fingerprint: &str) -> (PathBuf, String) {
        let content = format!("{digest}\n{fingerprint}\n");
        let name = hex_of(&sha256_digest(content.as_bytes())).to_string();
        (self.dir.join("verified").join(name), content)
    }

    /// The manifest digest a tag reference resolved to last time.
    pub(crate) fn reference(&self, reference: &str) -> Option<String> {
        let bytes = std::fs::read(self.reference_path(reference)).ok()?;
        let record: RefRecord = serde_json::from_slice(&bytes).ok()?;
        (record.reference == reference).then_some(record.manifest)
    }

    pub(crate) fn put_reference(
        &self,
        reference: &str,
        manifest_digest: &str,
    ) -> Result<(), OciError> {
        let record = RefRecord {
            reference: reference.into(),
            manifest: manifest_digest.into(),
        };
        write_atomically(
            &self.reference_path(reference),
            &serde_json::to_vec(&record).expect("json"),
        )
    }

    fn reference_path(&self, reference: &str) -> PathBuf {
        self.dir.join("refs").join(format!(
            "{}.json",
            hex_of(&sha256_digest(reference.as_bytes()))
        ))
    }

    /// Removes the least recently used blobs (never `keep`) until the blobs
    /// fit the bound. Failures only cost a warning: the cache stays usable.
    fn evict(&self, keep: &Path) {
        let dir = self.dir.join("blobs/sha256");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        let mut blobs: Vec<(SystemTime, u64, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let meta = entry.metadata().ok().filter(|m| m.is_file())?;
                Some((meta.modified().ok()?, meta.len(), entry.path()))
            })
            .collect();
        let mut total: u64 = blobs.iter().map(|(_, len, _)| len).sum();
        blobs.sort();
        for (_, len, path) in blobs {
            if total <= self.max_bytes {
                break;
            }
            if path == keep {
                continue;
            }
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    total -= len;
                    tracing::debug!(path = %path.display(), bytes = len, "OCI cache: evicted the least recently used blob");
                }
                Err(err) => {
                    tracing::warn!(path = %path.display(), error = %err, "OCI cache: cannot evict")
                }
            }
        }
    }
}

/// The hex digits of `sha256:<hex>`.
pub(crate) fn hex_of(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), OciError> {
    use std::io::Write as _;
    let dir = path.parent().expect("cache paths have a parent");
    let mut file =
        tempfile::NamedTempFile::new_in(dir).map_err(|source| cache_error(dir, source))?;
    file.write_all(bytes)
        .map_err(|source| cache_error(path, source))?;
    file.persist(path)
        .map_err(|err| cache_error(path, err.error))?;
    Ok(())
}

fn cache_error(path: &Path, source: std::io::Error) -> OciError {
    OciError::Cache {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(cache: &Cache, bytes: &[u8]) -> String {
        let digest = sha256_digest(bytes);
        cache.put_blob(&digest, bytes).unwrap();
        // Modification times order the uses; keep them apart.
        std::thread::sleep(std::time::Duration::from_millis(15));
        digest
    }

    #[test]
    fn the_least_recently_used_blob_goes_first_and_the_total_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path(), 3000).unwrap();
        let a = put(&cache, &[1; 1000]);
        let b = put(&cache, &[2; 1000]);
        let c = put(&cache, &[3; 1000]);
        assert!(
            cache.blob(&a).is_some(),
            "a is used again: b is now the oldest"
        );
        std::thread::sleep(std::time::Duration::from_millis(15));
        let d = put(&cache, &[4; 1000]);
        assert!(cache.blob(&b).is_none(), "b was least recently used");
        for kept in [&a, &c, &d] {
            assert!(cache.blob(kept).is_some());
        }
        let big = put(&cache, &[5; 2500]);
        assert!(cache.blob(&big).is_some(), "what was just written stays");
        let total: u64 = std::fs::read_dir(dir.path().join("blobs/sha256"))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        assert!(total <= 3000, "{total}");
    }

    #[test]
    fn a_changed_blob_or_record_is_not_served() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path(), DEFAULT_CACHE_MAX_BYTES).unwrap();
        let digest = put(&cache, b"module bytes");
        std::fs::write(cache.blob_path(&digest), b"other bytes").unwrap();
        assert!(cache.blob(&digest).is_none());
        assert!(
            !cache.blob_path(&digest).exists(),
            "the corrupt blob is removed"
        );

        let key = "sha256:key";
        cache.put_verified(&digest, key).unwrap();
        assert!(cache.verified(&digest, key));
        assert!(!cache.verified(&digest, "sha256:other"));
        let (path, _) = cache.verified_record(&digest, key);
        std::fs::write(&path, b"sha256:x\nsha256:key\n").unwrap();
        assert!(!cache.verified(&digest, key));

        cache.put_reference("r/p:v1", &digest).unwrap();
        assert_eq!(cache.reference("r/p:v1"), Some(digest.clone()));
        std::fs::write(
            cache.reference_path("r/p:v1"),
            br#"{"reference":"r/p:v2","manifest":"sha256:0"}"#,
        )
        .unwrap();
        assert_eq!(cache.reference("r/p:v1"), None);
    }
}
