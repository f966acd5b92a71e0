//! Decision modules as OCI artifacts: push a `.wasm` to a registry, pull it by
//! digest into an on-disk cache, and sign or verify it with cosign-compatible
//! signatures.
//!
//! The module delivery controller holds one [`Puller`] and calls
//! [`Puller::pull`] for every `DecisionModule` reference; the CLI's `push`,
//! `pull`, `inspect` and `sign` commands use the same functions.
//!
//! ```no_run
//! # async fn example() -> Result<(), rekon_oci::OciError> {
//! use rekon_oci::{PullRequest, Puller, PullerOptions};
//! let puller = Puller::new(PullerOptions { cache_dir: "/var/cache/rekon/oci".into(), ..Default::default() })?;
//! let pulled = puller.pull(&PullRequest::new("registry.example.com/platform/pvc-protection@sha256:0123…")).await?;
//! println!("{} bytes, wasm sha256:{}", pulled.bytes.len(), pulled.wasm_sha256);
//! # Ok(()) }
//! ```
//!
//! Artifact layouts (see [`layout`]): the CNCF Wasm OCI artifact (config
//! `application/vnd.wasm.config.v0+json`, one `application/wasm` layer), which
//! [`push`] writes, and the older single `application/vnd.wasm.content.layer.v1+wasm`
//! layer that wasm-to-oci and Kubewarden push.
//!
//! Limits (see [`HostPolicy`] and the `session` module): every read from a
//! registry is capped before it is buffered ([`MAX_MANIFEST_BYTES`],
//! [`MAX_SIGNATURE_PAYLOAD_BYTES`], layers at [`PullerOptions::max_bytes`]) and
//! timed; registry text in errors is cut to [`MAX_REGISTRY_TEXT`] bytes. The
//! host's policy decides plain HTTP per registry, the registries allowed and
//! the keys every module must be signed with.
//!
//! Signatures (see [`cosign`]) follow cosign's key-based format: a
//! `sha256-<manifest digest>.sig` tag whose layers are simple-signing payloads
//! carrying a `dev.cosignproject.cosign/signature` annotation (ECDSA P-256,
//! SHA-256, DER, base64).

mod auth;
mod cache;
pub mod cosign;
mod error;
pub mod layout;
mod policy;
mod pull;
mod push;
mod reference;
mod session;
#[cfg(feature = "testing")]
pub mod testing;
mod transport;

pub use auth::{RegistryAuth, auth_from_dockerconfigjson};
pub use cache::DEFAULT_CACHE_MAX_BYTES;
pub use cosign::{SigningKey, generate_key, sign, verify};
pub use error::OciError;
pub use policy::HostPolicy;
pub use pull::{DEFAULT_MAX_BYTES, PullRequest, Pulled, Puller, PullerOptions, Verification};
pub use push::{push, resolve};
pub use reference::{ModuleRef, Scheme, is_loopback_registry};
pub use session::{MAX_MANIFEST_BYTES, MAX_REGISTRY_TEXT, MAX_SIGNATURE_PAYLOAD_BYTES};
pub use transport::RegistryOptions;
