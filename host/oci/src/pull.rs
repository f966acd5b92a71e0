//! Pulling a module: check it against the host's policy, resolve the
//! reference, check size, layout and digests, verify the signatures asked for
//! (the request's key, the host's keys), and keep the bytes in the digest-keyed
//! cache.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use p256::ecdsa::VerifyingKey;

use crate::auth::RegistryAuth;
use crate::cache::{Cache, DEFAULT_CACHE_MAX_BYTES, hex_of};
use crate::cosign;
use crate::error::OciError;
use crate::layout::{parse_manifest, sha256_digest, wasm_layer};
use crate::policy::{HostPolicy, Policy};
use crate::reference::ModuleRef;
use crate::transport::{Client, Transport};

/// The default limit on the wasm layer: 64 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Settings shared by every pull of one [`Puller`].
#[derive(Debug, Clone)]
pub struct PullerOptions {
    /// The on-disk cache (created if missing), e.g. beside the precompiled cache.
    pub cache_dir: PathBuf,
    /// The bound on the cache's bytes; the least recently used modules go
    /// first. Default 512 MiB.
    pub cache_max_bytes: u64,
    /// The largest wasm layer accepted, checked against the manifest before
    /// downloading and enforced while streaming. Default [`DEFAULT_MAX_BYTES`].
    pub max_bytes: u64,
    /// The limit for one request and for one attempt. Default 60 s.
    pub timeout: Duration,
    /// Attempts after the first for transient failures. Default 2.
    pub retries: u32,
    /// The wait before the first retry, doubled for each further one. Default 500 ms.
    pub backoff: Duration,
    /// Extra trusted CA certificates (PEM), added to the system roots.
    pub extra_ca_pem: Vec<Vec<u8>>,
    /// What the host requires of every pull, whatever the request says.
    pub policy: HostPolicy,
}

impl Default for PullerOptions {
    fn default() -> Self {
        Self {
            cache_dir: std::env::temp_dir().join("rekon-oci-cache"),
            cache_max_bytes: DEFAULT_CACHE_MAX_BYTES,
            max_bytes: DEFAULT_MAX_BYTES,
            timeout: Duration::from_secs(60),
            retries: 2,
            backoff: Duration::from_millis(500),
            extra_ca_pem: Vec::new(),
            policy: HostPolicy::default(),
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
    /// Asks for plain HTTP to a registry that is not on loopback: refused
    /// ([`OciError::PolicyViolation`]) unless the host's policy lists that
    /// registry in `insecure_registries`. Plain HTTP is the host's choice per
    /// registry; this flag never widens it.
    pub insecure: bool,
    /// Credentials; `None` is anonymous.
    pub auth: Option<RegistryAuth>,
    /// Require a valid cosign signature.
    pub verify: Option<Verification>,
}

impl PullRequest {
    /// A request for `image` with no pin, anonymous, secure, unverified.
    pub fn new(image: impl Into<String>) -> Self {
        Self {
            image: image.into(),
            ..Default::default()
        }
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
    policy: Policy,
}

impl Puller {
    /// A puller with `options`; creates the cache directory, reads the CAs and the policy's keys.
    pub fn new(options: PullerOptions) -> Result<Self, OciError> {
        let policy = Policy::new(&options.policy)?;
        let cache = Cache::open(&options.cache_dir, options.cache_max_bytes)?;
        let transport = Transport::new(
            options.extra_ca_pem,
            options.timeout,
            options.retries,
            options.backoff,
        )?;
        Ok(Self {
            inner: Arc::new(Inner {
                max_bytes: options.max_bytes,
                cache,
                transport,
                policy,
            }),
        })
    }

    /// Pulls `request`. The host's policy is checked first, before the cache
    /// and the network: registry allowed, plain HTTP allowed. Then from the
    /// cache when the manifest (by digest, or the one a tag resolved to last
    /// time, holding the pinned wasm sha256) is there, intact, and its
    /// signature verified with the keys asked for; else from the registry.
    pub async fn pull(&self, request: &PullRequest) -> Result<Pulled, OciError> {
        let module = ModuleRef::parse(&request.image)?;
        let policy = &self.inner.policy;
        policy.admit(&module, request.insecure)?;
        let pinned_wasm = match &request.sha256 {
            Some(text) => Some(parse_sha256(&module, text)?),
            None if module.digest().is_none() => {
                return Err(OciError::Unpinned {
                    reference: module.to_string(),
                });
            }
            None => None,
        };
        let key = request
            .verify
            .as_ref()
            .map(|v| cosign::public_key(&v.cosign_public_key_pem))
            .transpose()?;
        if let Some(pulled) = self.cached(&module, pinned_wasm.as_deref(), key.as_ref()) {
            return Ok(pulled);
        }
        let plain_allowed = policy.allows_plain_http(module.registry());
        self.inner
            .transport
            .run(
                &module,
                plain_allowed,
                request.auth.as_ref(),
                async |client| {
                    self.fetch(client, &module, pinned_wasm.as_deref(), key.as_ref())
                        .await
                },
            )
            .await
    }

    fn cached(
        &self,
        module: &ModuleRef,
        pinned_wasm: Option<&str>,
        key: Option<&VerifyingKey>,
    ) -> Option<Pulled> {
        let cache = &self.inner.cache;
        let manifest_digest = match module.digest() {
            Some(digest) => digest.to_string(),
            None => cache.reference(module.as_str())?,
        };
        let manifest = parse_manifest(&cache.blob(&manifest_digest)?).ok()?;
        let layer = wasm_layer(&manifest).ok()?;
        if pinned_wasm.is_some_and(|pin| pin != layer.digest) {
            return None;
        }
        let verified =
            |key: &VerifyingKey| cache.verified(&manifest_digest, &cosign::fingerprint(key));
        if key.is_some_and(|key| !verified(key)) {
            return None;
        }
        let host_keys = self.inner.policy.keys();
        if !host_keys.is_empty() && !host_keys.iter().any(verified) {
            return None;
        }
        let bytes = cache.blob(&layer.digest)?;
        if bytes.len() as u64 > self.inner.max_bytes {
            return None;
        }
        tracing::debug!(reference = %module, %manifest_digest, "module served from the OCI cache");
        Some(Pulled {
            wasm_sha256: hex_of(&layer.digest).to_string(),
            bytes: bytes.into(),
            path: cache.blob_path(&layer.digest),
            manifest_digest,
            image: module.to_string(),
            verified: key.is_some() || !host_keys.is_empty(),
            from_cache: true,
        })
    }

    async fn fetch(
        &self,
        client: &Client,
        module: &ModuleRef,
        pinned_wasm: Option<&str>,
        key: Option<&VerifyingKey>,
    ) -> Result<Pulled, OciError> {
        let reference = module.to_string();
        let name = module.digest().or(module.tag()).unwrap_or("latest");
        let manifest_bytes = client.session.manifest(module, name, "manifest").await?;
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
        let manifest = parse_manifest(&manifest_bytes).map_err(|reason| OciError::NotWasm {
            reference: reference.clone(),
            reason,
        })?;
        let layer = wasm_layer(&manifest).map_err(|reason| OciError::NotWasm {
            reference: reference.clone(),
            reason,
        })?;
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
            return Err(OciError::TooLarge {
                reference,
                what: "wasm layer".into(),
                size: layer.size.max(0) as u64,
                limit,
            });
        }
        let mut verified_by = Vec::new();
        if let Some(key) = key {
            cosign::verify_with(client, module, &manifest_digest, std::slice::from_ref(key))
                .await?;
            verified_by.push(key);
        }
        let host_keys = self.inner.policy.keys();
        if !host_keys.is_empty() {
            let index = cosign::verify_with(client, module, &manifest_digest, host_keys)
                .await
                .map_err(|err| match err {
                    OciError::Unsigned { cause, .. } | OciError::BadSignature { cause, .. } => {
                        OciError::PolicyViolation {
                            reference: reference.clone(),
                            rule: format!(
                                "the host requires a signature that one of its {} key(s) verifies (--require-signature): {cause}",
                                host_keys.len()
                            ),
                        }
                    }
                    other => other,
                })?;
            verified_by.push(&host_keys[index]);
        }
        let bytes = client
            .session
            .blob(module, &layer.digest, "wasm layer", limit)
            .await?;
        let actual = sha256_digest(&bytes);
        if actual != layer.digest {
            return Err(OciError::DigestMismatch {
                reference,
                what: "wasm layer".into(),
                expected: layer.digest.clone(),
                actual,
            });
        }
        if !bytes.starts_with(WASM_MAGIC) {
            return Err(OciError::NotWasm {
                reference,
                reason: format!(
                    "layer {} ({}) does not start with the wasm magic bytes",
                    layer.digest, layer.media_type
                ),
            });
        }
        let cache = &self.inner.cache;
        let path = cache.put_blob(&layer.digest, &bytes)?;
        cache.put_blob(&manifest_digest, &manifest_bytes)?;
        for key in verified_by {
            cache.put_verified(&manifest_digest, &cosign::fingerprint(key))?;
        }
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
            verified: key.is_some() || !host_keys.is_empty(),
            from_cache: false,
        })
    }
}

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
