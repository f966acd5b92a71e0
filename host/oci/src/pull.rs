//! Pulling a module: resolve the reference, check size, layout and digests,
//! verify the signature when asked, and keep the bytes in the digest-keyed cache.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::RegistryAuth;
use crate::error::OciError;

/// The default limit on the wasm layer: 64 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Settings shared by every pull of one [`Puller`].
#[derive(Debug, Clone)]
pub struct PullerOptions {
    /// The on-disk cache (created if missing), e.g. beside the precompiled cache.
    pub cache_dir: PathBuf,
    /// The largest wasm layer accepted, checked against the manifest before
    /// downloading and enforced while streaming. Default [`DEFAULT_MAX_BYTES`].
    pub max_bytes: u64,
    /// The limit for one attempt. Default 60 s.
    pub timeout: Duration,
    /// Attempts after the first for transient failures. Default 2.
    pub retries: u32,
    /// The wait before the first retry, doubled for each further one. Default 500 ms.
    pub backoff: Duration,
    /// Extra trusted CA certificates (PEM), added to the system roots.
    pub extra_ca_pem: Vec<Vec<u8>>,
}

impl Default for PullerOptions {
    fn default() -> Self {
        Self {
            cache_dir: std::env::temp_dir().join("rekon-oci-cache"),
            max_bytes: DEFAULT_MAX_BYTES,
            timeout: Duration::from_secs(60),
            retries: 2,
            backoff: Duration::from_millis(500),
            extra_ca_pem: Vec::new(),
        }
    }
}

/// How to verify a module's signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// A cosign public key: ECDSA P-256 in PEM (`-----BEGIN PUBLIC KEY-----`).
    pub cosign_public_key_pem: Vec<u8>,
}

/// One module to pull.
#[derive(Debug, Clone, Default)]
pub struct PullRequest {
    /// `REGISTRY/REPO@sha256:<manifest digest>` or `REGISTRY/REPO:TAG`
    /// (optionally prefixed `oci://`, `http://`, `https://`).
    pub image: String,
    /// The sha256 of the wasm bytes (64 hex digits, `sha256:` prefix optional).
    /// Required when `image` is by tag; checked whenever given.
    pub sha256: Option<String>,
    /// Allow plain HTTP to a registry that is not on loopback.
    pub insecure: bool,
    /// Credentials; `None` is anonymous.
    pub auth: Option<RegistryAuth>,
    /// Require a valid cosign signature.
    pub verify: Option<Verification>,
}

impl PullRequest {
    /// A request for `image` with no pin, anonymous, secure, unverified.
    pub fn new(image: impl Into<String>) -> Self {
        Self { image: image.into(), ..Default::default() }
    }
}

/// A pulled module.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The wasm bytes.
    pub bytes: Arc<[u8]>,
    /// sha256 of the bytes, 64 lowercase hex digits (no prefix).
    pub wasm_sha256: String,
    /// The manifest digest, `sha256:...`.
    pub manifest_digest: String,
    /// The reference as requested.
    pub image: String,
    /// The bytes' file in the on-disk cache.
    pub path: PathBuf,
    /// Whether a signature was verified (always true when `verify` was given).
    pub verified: bool,
    /// Whether the bytes came from the cache without network I/O.
    pub from_cache: bool,
}

/// Pulls modules into one on-disk cache; cheap to clone, safe to share.
#[derive(Clone)]
pub struct Puller {
    options: Arc<PullerOptions>,
}

impl Puller {
    /// A puller with `options`; creates the cache directory and reads the CAs.
    pub fn new(options: PullerOptions) -> Result<Self, OciError> {
        let _ = &options;
        todo!()
    }

    /// Pulls `request`: from the cache when the manifest digest (or, for a tag,
    /// the wasm sha256) is already there, else from the registry.
    pub async fn pull(&self, request: &PullRequest) -> Result<Pulled, OciError> {
        let _ = (&self.options, request);
        todo!()
    }
}
