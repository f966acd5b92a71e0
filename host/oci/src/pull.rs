//! Pulling a module: resolve the reference, check size, layout and digests,
//! verify the signature when asked, and keep the bytes in the digest-keyed cache.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use oci_client::manifest::OciDescriptor;
use p256::ecdsa::VerifyingKey;
use sha2::{Digest as _, Sha256};

use crate::auth::RegistryAuth;
use crate::cache::{Cache, ManifestRecord};
use crate::cosign;
use crate::error::OciError;
use crate::layout::{MANIFEST_MEDIA_TYPES, parse_manifest, sha256_digest, wasm_layer};
use crate::reference::ModuleRef;
use crate::transport::{Client, Transport, error_chain, registry_error};

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
    inner: Arc<Inner>,
}

struct Inner {
    max_bytes: u64,
    cache: Cache,
    transport: Transport,
}

impl Puller {
    /// A puller with `options`; creates the cache directory and reads the CAs.
    pub fn new(options: PullerOptions) -> Result<Self, OciError> {
        let cache = Cache::open(&options.cache_dir)?;
        let transport = Transport::new(options.extra_ca_pem, options.timeout, options.retries, options.backoff)?;
        Ok(Self { inner: Arc::new(Inner { max_bytes: options.max_bytes, cache, transport }) })
    }

    /// Pulls `request`: from the cache when the manifest digest (or, for a tag,
    /// the manifest it resolved to last time, holding the pinned wasm sha256) is
    /// already there and, if asked, was verified with the same key; else from
    /// the registry. Plain HTTP is refused before connecting (see
    /// [`crate::is_loopback_registry`]).
    pub async fn pull(&self, request: &PullRequest) -> Result<Pulled, OciError> {
        let module = ModuleRef::parse(&request.image)?;
        if module.scheme() == crate::Scheme::Http && !module.allows_plain_http(request.insecure) {
            return Err(OciError::InsecureRefused { reference: module.to_string(), registry: module.registry().into() });
        }
        let pinned_wasm = match &request.sha256 {
            Some(text) => Some(parse_sha256(&module, text)?),
            None if module.digest().is_none() => return Err(OciError::Unpinned { reference: module.to_string() }),
            None => None,
        };
        let key = request.verify.as_ref().map(|v| cosign::public_key(&v.cosign_public_key_pem)).transpose()?;
        if let Some(pulled) = self.from_cache(&module, pinned_wasm.as_deref(), key.as_ref()) {
            return Ok(pulled);
        }
        let pulled = self
            .inner
            .transport
            .run(&module, request.insecure, request.auth.as_ref(), async |client| {
                self.from_registry(client, &module, pinned_wasm.as_deref(), key.as_ref()).await
            })
            .await?;
        Ok(pulled)
    }

    fn from_cache(&self, module: &ModuleRef, pinned_wasm: Option<&str>, key: Option<&VerifyingKey>) -> Option<Pulled> {
        let cache = &self.inner.cache;
        let manifest_digest = match module.digest() {
            Some(digest) => digest.to_string(),
            None => cache.reference(module.as_str())?,
        };
        let record = cache.manifest(&manifest_digest)?;
        if pinned_wasm.is_some_and(|pin| pin != record.wasm_digest) {
            return None;
        }
        if key.is_some_and(|key| !record.verified_keys.contains(&cosign::fingerprint(key))) {
            return None;
        }
        let bytes = cache.blob(&record.wasm_digest)?;
        tracing::debug!(reference = %module, %manifest_digest, "module served from the OCI cache");
        Some(Pulled {
            wasm_sha256: hex_of(&record.wasm_digest).to_string(),
            bytes: bytes.into(),
            manifest_digest,
            image: module.to_string(),
            path: cache.blob_path(&record.wasm_digest),
            verified: key.is_some(),
            from_cache: true,
        })
    }

    async fn from_registry(
        &self,
        client: &Client,
        module: &ModuleRef,
        pinned_wasm: Option<&str>,
        key: Option<&VerifyingKey>,
    ) -> Result<Pulled, OciError> {
        let reference = module.to_string();
        let (manifest_bytes, _) = client
            .inner
            .pull_manifest_raw(module.oci(), &client.auth, &MANIFEST_MEDIA_TYPES)
            .await
            .map_err(|err| registry_error(module, "manifest", err))?;
        if manifest_bytes.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(OciError::TooLarge {
                reference,
                what: "manifest".into(),
                size: manifest_bytes.len() as u64,
                limit: MAX_MANIFEST_BYTES,
            });
        }
        let manifest_digest = sha256_digest(&manifest_bytes);
        if let Some(expected) = module.digest()
            && expected != manifest_digest
        {
            return Err(OciError::DigestMismatch {
                reference,
                what: "manifest".into(),
                expected: expected.into(),
                actual: manifest_digest,
            });
        }
        let manifest = parse_manifest(&manifest_bytes).map_err(|reason| OciError::NotWasm { reference: reference.clone(), reason })?;
        let layer = wasm_layer(&manifest).map_err(|reason| OciError::NotWasm { reference: reference.clone(), reason })?;
        if let Some(pin) = pinned_wasm
            && layer.digest != pin
        {
            return Err(OciError::DigestMismatch {
                reference,
                what: "wasm bytes (pinned sha256)".into(),
                expected: pin.into(),
                actual: layer.digest.clone(),
            });
        }
        let limit = self.inner.max_bytes;
        if layer.size < 0 || layer.size as u64 > limit {
            return Err(OciError::TooLarge { reference, what: "wasm layer".into(), size: layer.size.max(0) as u64, limit });
        }
        let mut verified_keys = self.inner.cache.manifest(&manifest_digest).map(|r| r.verified_keys).unwrap_or_default();
        if let Some(key) = key {
            cosign::verify_with(client, module, &manifest_digest, key).await?;
            verified_keys.push(cosign::fingerprint(key));
            verified_keys.sort();
            verified_keys.dedup();
        }
        let bytes = self.download(client, module, layer).await?;
        if !bytes.starts_with(WASM_MAGIC) {
            return Err(OciError::NotWasm {
                reference,
                reason: format!("layer {} ({}) does not start with the wasm magic bytes", layer.digest, layer.media_type),
            });
        }
        let cache = &self.inner.cache;
        let path = cache.put_blob(&layer.digest, &bytes)?;
        cache.put_manifest(&manifest_digest, &ManifestRecord { wasm_digest: layer.digest.clone(), verified_keys })?;
        if module.digest().is_none() {
            cache.put_reference(module.as_str(), &manifest_digest)?;
        }
        tracing::info!(%reference, %manifest_digest, wasm = %layer.digest, size = bytes.len(), "module pulled");
        Ok(Pulled {
            bytes: bytes.into(),
            wasm_sha256: hex_of(&layer.digest).to_string(),
            manifest_digest,
            image: reference,
            path,
            verified: key.is_some(),
            from_cache: false,
        })
    }

    /// Streams the layer, stopping as soon as it passes the limit, and checks its digest.
    async fn download(&self, client: &Client, module: &ModuleRef, layer: &OciDescriptor) -> Result<Vec<u8>, OciError> {
        use futures::StreamExt as _;
        let reference = module.to_string();
        let limit = self.inner.max_bytes;
        let mut stream = client
            .inner
            .pull_blob_stream(module.oci(), layer)
            .await
            .map_err(|err| registry_error(module, "wasm layer", err))?;
        if let Some(length) = stream.content_length
            && length > limit
        {
            return Err(OciError::TooLarge { reference, what: "wasm layer".into(), size: length, limit });
        }
        let mut bytes = Vec::with_capacity(layer.size as usize);
        let mut hasher = Sha256::new();
        let mut failure = None;
        while let Some(chunk) = stream.stream.next().await {
            match chunk {
                Ok(chunk) => {
                    if (bytes.len() + chunk.len()) as u64 > limit {
                        return Err(OciError::TooLarge {
                            reference,
                            what: "wasm layer (as sent)".into(),
                            size: (bytes.len() + chunk.len()) as u64,
                            limit,
                        });
                    }
                    hasher.update(&chunk);
                    bytes.extend_from_slice(&chunk);
                }
                Err(err) => {
                    failure = Some(err);
                    break;
                }
            }
        }
        let actual = format!("sha256:{}", hex::encode(hasher.finalize()));
        if actual != layer.digest && (failure.is_none() || bytes.len() as i64 >= layer.size) {
            return Err(OciError::DigestMismatch { reference, what: "wasm layer".into(), expected: layer.digest.clone(), actual });
        }
        if let Some(err) = failure {
            return Err(OciError::Unreachable {
                reference,
                registry: module.registry().into(),
                cause: format!("wasm layer transfer: {}", error_chain(&err)),
            });
        }
        Ok(bytes)
    }
}

/// Manifests larger than this are refused (registries refuse 4 MiB ones too).
const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;
const WASM_MAGIC: &[u8] = b"\0asm";

fn parse_sha256(module: &ModuleRef, text: &str) -> Result<String, OciError> {
    let hex = text.trim().strip_prefix("sha256:").unwrap_or(text.trim());
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(format!("sha256:{}", hex.to_ascii_lowercase()))
    } else {
        Err(OciError::InvalidReference {
            reference: module.to_string(),
            reason: format!("sha256 `{text}` is not 64 hex digits (optionally prefixed `sha256:`)"),
        })
    }
}

fn hex_of(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}
