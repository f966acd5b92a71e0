//! The on-disk cache: wasm bytes keyed by their sha256 (`blobs/sha256/<hex>`),
//! a record per manifest digest naming its wasm digest and the keys its
//! signature verified with (`manifests/sha256/<hex>.json`), and for tag pulls a
//! record per reference naming the last manifest digest (`refs/<sha256 of the
//! reference>.json`). Writes go to a temporary file renamed into place, so a
//! reader never sees half a file; every read is checked against its digest.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::OciError;
use crate::layout::sha256_digest;

/// What is known about one manifest.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct ManifestRecord {
    /// `sha256:<hex>` of the wasm bytes.
    pub(crate) wasm_digest: String,
    /// sha256 fingerprints of the public keys a signature verified with.
    #[serde(default)]
    pub(crate) verified_keys: Vec<String>,
}

pub(crate) struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub(crate) fn open(dir: &Path) -> Result<Self, OciError> {
        for sub in ["blobs/sha256", "manifests/sha256", "refs"] {
            let path = dir.join(sub);
            std::fs::create_dir_all(&path).map_err(|source| cache_error(&path, source))?;
        }
        Ok(Self { dir: dir.to_path_buf() })
    }

    /// Where the wasm bytes of `digest` (`sha256:<hex>`) live.
    pub(crate) fn blob_path(&self, digest: &str) -> PathBuf {
        self.dir.join("blobs/sha256").join(hex_of(digest))
    }

    /// The bytes of `digest`, if present and intact (a corrupt file is removed).
    pub(crate) fn blob(&self, digest: &str) -> Option<Vec<u8>> {
        let path = self.blob_path(digest);
        let bytes = std::fs::read(&path).ok()?;
        if sha256_digest(&bytes) == digest {
            Some(bytes)
        } else {
            tracing::warn!(path = %path.display(), "OCI cache entry is corrupt; pulling again");
            let _ = std::fs::remove_file(&path);
            None
        }
    }

    pub(crate) fn put_blob(&self, digest: &str, bytes: &[u8]) -> Result<PathBuf, OciError> {
        let path = self.blob_path(digest);
        write_atomically(&path, bytes)?;
        Ok(path)
    }

    pub(crate) fn manifest(&self, digest: &str) -> Option<ManifestRecord> {
        read_json(&self.dir.join("manifests/sha256").join(format!("{}.json", hex_of(digest))))
    }

    pub(crate) fn put_manifest(&self, digest: &str, record: &ManifestRecord) -> Result<(), OciError> {
        let path = self.dir.join("manifests/sha256").join(format!("{}.json", hex_of(digest)));
        write_atomically(&path, &serde_json::to_vec(record).expect("json"))
    }

    /// The manifest digest a tag reference resolved to last time.
    pub(crate) fn reference(&self, reference: &str) -> Option<String> {
        read_json(&self.reference_path(reference))
    }

    pub(crate) fn put_reference(&self, reference: &str, manifest_digest: &str) -> Result<(), OciError> {
        write_atomically(&self.reference_path(reference), &serde_json::to_vec(manifest_digest).expect("json"))
    }

    fn reference_path(&self, reference: &str) -> PathBuf {
        self.dir.join("refs").join(format!("{}.json", hex_of(&sha256_digest(reference.as_bytes()))))
    }
}

fn hex_of(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), OciError> {
    use std::io::Write as _;
    let dir = path.parent().expect("cache paths have a parent");
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(|source| cache_error(dir, source))?;
    file.write_all(bytes).map_err(|source| cache_error(path, source))?;
    file.persist(path).map_err(|err| cache_error(path, err.error))?;
    Ok(())
}

fn cache_error(path: &Path, source: std::io::Error) -> OciError {
    OciError::Cache { path: path.display().to_string(), source }
}
