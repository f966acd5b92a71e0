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
//! Signatures (see [`cosign`]) follow cosign's key-based format: a
//! `sha256-<manifest digest>.sig` tag whose layers are simple-signing payloads
//! carrying a `dev.cosignproject.cosign/signature` annotation (ECDSA P-256,
//! SHA-256, DER, base64).

mod auth;
mod cache;
pub mod cosign;
mod error;
pub mod layout;
mod pull;
mod push;
mod reference;
#[cfg(feature = "testing")]
pub mod testing;
mod transport;

pub use auth::{RegistryAuth, auth_from_dockerconfigjson};
pub use cosign::{SigningKey, generate_key, sign, verify};
pub use error::OciError;
pub use pull::{DEFAULT_MAX_BYTES, Pulled, PullRequest, Puller, PullerOptions, Verification};
pub use push::push;
pub use reference::{ModuleRef, Scheme, is_loopback_registry};
pub use transport::RegistryOptions;
