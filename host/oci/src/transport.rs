//! How to reach a registry: HTTPS with the system roots plus extra CAs, plain
//! HTTP only where allowed, credentials, a per-attempt timeout and retries with
//! backoff.

use std::time::Duration;

use crate::auth::RegistryAuth;

/// Connection settings shared by push, pull, sign and verify.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// Allow plain HTTP to a registry that is not on loopback.
    pub insecure: bool,
    /// Credentials; `None` is anonymous.
    pub auth: Option<RegistryAuth>,
    /// Extra trusted CA certificates (PEM), added to the system roots.
    pub extra_ca_pem: Vec<Vec<u8>>,
    /// The limit for one attempt (connect, manifest and blob transfer).
    pub timeout: Duration,
    /// Attempts after the first one for transient failures (unreachable, timeout, 5xx).
    pub retries: u32,
    /// The wait before the first retry; doubled for each further one.
    pub backoff: Duration,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        Self {
            insecure: false,
            auth: None,
            extra_ca_pem: Vec::new(),
            timeout: Duration::from_secs(60),
            retries: 2,
            backoff: Duration::from_millis(500),
        }
    }
}
