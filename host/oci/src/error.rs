//! Why a push, pull, signature or verification failed, naming the reference and
//! the cause.

use std::time::Duration;

/// Every failure of this crate. Each message names the reference (or registry)
/// and the cause; [`OciError::reason`] gives a CamelCase word for a status
/// condition.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OciError {
    /// The reference could not be parsed.
    #[error("`{reference}` is not an OCI reference: {reason}")]
    InvalidReference { reference: String, reason: String },

    /// A tag reference without a pinned `sha256` of the wasm bytes.
    #[error(
        "`{reference}` names a tag but no sha256 of the wasm bytes: pin it by manifest digest (`REPO@sha256:...`) or give `sha256`"
    )]
    Unpinned { reference: String },

    /// Plain HTTP asked for a registry that is not on loopback, without `--insecure`.
    #[error(
        "`{reference}`: plain HTTP to registry {registry} refused; it is allowed only for loopback registries (127.0.0.0/8, ::1, localhost) or with --insecure"
    )]
    InsecureRefused { reference: String, registry: String },

    /// The manifest, tag, or a blob does not exist.
    #[error("`{reference}`: {what} not found in the registry")]
    NotFound { reference: String, what: String },

    /// The registry could not be reached (connection, TLS, DNS).
    #[error("`{reference}`: registry {registry} unreachable: {cause}")]
    Unreachable {
        reference: String,
        registry: String,
        cause: String,
    },

    /// No attempt finished in time.
    #[error("`{reference}`: pull timed out after {attempts} attempt(s) of {timeout:?} each")]
    Timeout {
        reference: String,
        timeout: Duration,
        attempts: u32,
    },

    /// The registry refused the credentials, or they could not be read.
    #[error("`{reference}`: credentials: {cause}")]
    Credentials { reference: String, cause: String },

    /// What arrived does not hash to the pinned digest.
    #[error("`{reference}`: {what} digest mismatch: expected {expected}, got {actual}")]
    DigestMismatch {
        reference: String,
        what: String,
        expected: String,
        actual: String,
    },

    /// The wasm layer (or the manifest) is larger than the limit.
    #[error("`{reference}`: {what} is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        reference: String,
        what: String,
        size: u64,
        limit: u64,
    },

    /// The artifact is not a wasm module in a known layout.
    #[error("`{reference}` is not a wasm artifact: {reason}")]
    NotWasm { reference: String, reason: String },

    /// Verification was asked for and no signature exists.
    #[error("`{reference}` is not signed: {cause}")]
    Unsigned { reference: String, cause: String },

    /// Signatures exist but none verifies with the key.
    #[error("`{reference}`: bad signature: {cause}")]
    BadSignature { reference: String, cause: String },

    /// A key could not be read or used.
    #[error("key {what}: {cause}")]
    Key { what: String, cause: String },

    /// Any other registry answer.
    #[error("`{reference}`: registry error: {cause}")]
    Registry { reference: String, cause: String },

    /// The host's policy refuses the module (a registry it does not allow,
    /// plain HTTP it does not allow, no signature its keys verify).
    #[error("`{reference}` refused by the host's policy: {rule}")]
    PolicyViolation { reference: String, rule: String },

    /// The on-disk cache could not be read or written.
    #[error("OCI cache {path}: {source}")]
    Cache {
        path: String,
        source: std::io::Error,
    },
}

impl OciError {
    /// A CamelCase word for a status condition's `reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::InvalidReference { .. } => "InvalidReference",
            Self::Unpinned { .. } => "Unpinned",
            Self::InsecureRefused { .. } => "InsecureRefused",
            Self::NotFound { .. } => "NotFound",
            Self::Unreachable { .. } => "Unreachable",
            Self::Timeout { .. } => "Timeout",
            Self::Credentials { .. } => "Credentials",
            Self::DigestMismatch { .. } => "DigestMismatch",
            Self::TooLarge { .. } => "TooLarge",
            Self::NotWasm { .. } => "NotWasm",
            Self::Unsigned { .. } => "Unsigned",
            Self::BadSignature { .. } => "BadSignature",
            Self::Key { .. } => "Key",
            Self::Registry { .. } => "RegistryError",
            Self::PolicyViolation { .. } => "PolicyViolation",
            Self::Cache { .. } => "CacheError",
        }
    }

    /// Whether trying again later may succeed (unreachable, timeout, registry
    /// errors); a mismatch, a missing signature or a refusal will not change.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Unreachable { .. }
                | Self::Timeout { .. }
                | Self::Registry { .. }
                | Self::Cache { .. }
        )
    }
}

/// An error and its sources, joined by `: `.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let next = cause.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = cause.source();
    }
    text
}
