//! How to reach a registry: HTTPS with the system roots plus extra CAs, plain
//! HTTP only where the caller allows it for that registry (decided per call,
//! never remembered from one call for another), credentials, a timeout per
//! request and per attempt, and retries with backoff; and what registry errors
//! mean.

use std::time::Duration;

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::{DigestError, OciDistributionError, OciErrorCode};

use crate::auth::RegistryAuth;
use crate::error::{OciError, error_chain};
use crate::reference::{ModuleRef, Scheme};
use crate::session::{Session, cut};

/// Connection settings shared by push, sign and verify.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// Allow plain HTTP to the registry named (loopback registries are always allowed).
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

/// Builds clients and runs registry operations with scheme choice, timeout and retries.
pub(crate) struct Transport {
    extra_ca_pem: Vec<Vec<u8>>,
    timeout: Duration,
    retries: u32,
    backoff: Duration,
}

impl Transport {
    pub(crate) fn new(
        extra_ca_pem: Vec<Vec<u8>>,
        timeout: Duration,
        retries: u32,
        backoff: Duration,
    ) -> Result<Self, OciError> {
        // reqwest is built without a bundled provider; rekon uses ring (as kube does).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let transport = Self {
            extra_ca_pem,
            timeout,
            retries,
            backoff,
        };
        let check = ModuleRef::parse("ca-check.invalid/check:v1").expect("a valid reference");
        transport
            .client(false, &RegistryAuth::Anonymous, &check)
            .map_err(|cause| OciError::Key {
                what: "extra CA certificate".into(),
                cause,
            })?;
        Ok(transport)
    }

    pub(crate) fn from_options(options: &RegistryOptions) -> Result<Self, OciError> {
        Self::new(
            options.extra_ca_pem.clone(),
            options.timeout,
            options.retries,
            options.backoff,
        )
    }

    fn client(
        &self,
        plain_http: bool,
        auth: &RegistryAuth,
        reference: &ModuleRef,
    ) -> Result<Client, String> {
        let config = ClientConfig {
            protocol: if plain_http {
                ClientProtocol::Http
            } else {
                ClientProtocol::Https
            },
            extra_root_certificates: self
                .extra_ca_pem
                .iter()
                .map(|pem| Certificate {
                    encoding: CertificateEncoding::Pem,
                    data: pem.clone(),
                })
                .collect(),
            connect_timeout: Some(self.timeout),
            read_timeout: Some(self.timeout),
            platform_resolver: None,
            ..Default::default()
        };
        let inner = oci_client::Client::try_from(config).map_err(|err| err.to_string())?;
        let roots = self
            .extra_ca_pem
            .iter()
            .map(|pem| reqwest::Certificate::from_pem(pem))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| err.to_string())?;
        let http = reqwest::Client::builder()
            .tls_certs_merge(roots)
            .connect_timeout(self.timeout)
            .read_timeout(self.timeout)
            .user_agent(concat!("rekon/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| error_chain(&err))?;
        Ok(Client {
            inner,
            auth: auth.to_oci(),
            registry: reference.registry().to_string(),
            session: Session::new(http, plain_http, reference, auth, self.timeout),
        })
    }

    /// Runs `op` against the registry of `reference`: refuses plain HTTP where
    /// it is not allowed (before connecting), tries HTTPS then plain HTTP where
    /// it is, limits each attempt to the timeout and retries transient failures.
    /// `insecure` allows plain HTTP to this reference's registry, for this call only.
    pub(crate) async fn run<T>(
        &self,
        reference: &ModuleRef,
        insecure: bool,
        auth: Option<&RegistryAuth>,
        op: impl AsyncFn(&Client) -> Result<T, OciError>,
    ) -> Result<T, OciError> {
        let allows_plain = reference.allows_plain_http(insecure);
        if reference.scheme() == Scheme::Http && !allows_plain {
            return Err(OciError::InsecureRefused {
                reference: reference.to_string(),
                registry: reference.registry().to_string(),
            });
        }
        let auth = auth.cloned().unwrap_or_default();
        let mut attempt = 0;
        loop {
            let result = tokio::time::timeout(
                self.timeout,
                self.attempt(reference, allows_plain, &auth, &op),
            )
            .await;
            let err = match result {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(err)) => err,
                Err(_) => OciError::Timeout {
                    reference: reference.to_string(),
                    timeout: self.timeout,
                    attempts: attempt + 1,
                },
            };
            if !err.is_transient() || attempt >= self.retries {
                return Err(match err {
                    OciError::Timeout {
                        reference, timeout, ..
                    } => OciError::Timeout {
                        reference,
                        timeout,
                        attempts: attempt + 1,
                    },
                    other => other,
                });
            }
            let wait = self.backoff * 2u32.saturating_pow(attempt);
            tracing::debug!(reference = %reference, error = %err, ?wait, "registry attempt failed; retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// One attempt: the scheme the reference asks for, or HTTPS and then
    /// plain HTTP when HTTPS is unreachable and plain HTTP is allowed.
    async fn attempt<T>(
        &self,
        reference: &ModuleRef,
        allows_plain: bool,
        auth: &RegistryAuth,
        op: &impl AsyncFn(&Client) -> Result<T, OciError>,
    ) -> Result<T, OciError> {
        let plain = reference.scheme() == Scheme::Http;
        let client = self
            .client(plain, auth, reference)
            .map_err(|cause| unreachable(reference, cause))?;
        let first = op(&client).await;
        let fall_back = reference.scheme() == Scheme::Any && allows_plain;
        match first {
            Err(OciError::Unreachable {
                cause: https_cause, ..
            }) if fall_back => {
                let client = self
                    .client(true, auth, reference)
                    .map_err(|cause| unreachable(reference, cause))?;
                match op(&client).await {
                    Err(OciError::Unreachable { cause, .. }) => Err(unreachable(
                        reference,
                        format!("over HTTPS: {https_cause}; over plain HTTP: {cause}"),
                    )),
                    other => other,
                }
            }
            other => other,
        }
    }
}

/// An oci-client client bound to one registry's credentials.
pub(crate) struct Client {
    pub(crate) inner: oci_client::Client,
    pub(crate) auth: oci_client::secrets::RegistryAuth,
    registry: String,
    /// Capped reads (manifests, signatures, layers) of the same registry and scheme.
    pub(crate) session: Session,
}

impl Client {
    /// Stores the credentials for blob and manifest calls that take none.
    pub(crate) async fn authorize(
        &self,
        reference: &oci_client::Reference,
        operation: oci_client::RegistryOperation,
    ) -> Result<(), OciDistributionError> {
        self.inner
            .store_auth_if_needed(&self.registry, &self.auth)
            .await;
        self.inner
            .auth(reference, &self.auth, operation)
            .await
            .map(|_| ())
    }
}

fn unreachable(reference: &ModuleRef, cause: String) -> OciError {
    OciError::Unreachable {
        reference: reference.to_string(),
        registry: reference.registry().to_string(),
        cause,
    }
}

/// Translates an oci-client error about `what` (e.g. "manifest") of `reference`.
pub(crate) fn registry_error(
    reference: &ModuleRef,
    what: &str,
    err: OciDistributionError,
) -> OciError {
    let reference_text = reference.to_string();
    match err {
        OciDistributionError::RequestError(err) => unreachable(reference, cut(&error_chain(&err))),
        OciDistributionError::ImageManifestNotFoundError(_) => OciError::NotFound {
            reference: reference_text,
            what: what.into(),
        },
        OciDistributionError::RegistryError { envelope, .. } => {
            let codes: Vec<&OciErrorCode> = envelope.errors.iter().map(|e| &e.code).collect();
            if codes.iter().any(|c| {
                matches!(
                    c,
                    OciErrorCode::ManifestUnknown
                        | OciErrorCode::BlobUnknown
                        | OciErrorCode::NameUnknown
                )
            }) {
                OciError::NotFound {
                    reference: reference_text,
                    what: what.into(),
                }
            } else if codes
                .iter()
                .any(|c| matches!(c, OciErrorCode::Unauthorized | OciErrorCode::Denied))
            {
                OciError::Credentials {
                    reference: reference_text,
                    cause: format!("{what}: {}", cut(&envelope.to_string())),
                }
            } else {
                OciError::Registry {
                    reference: reference_text,
                    cause: format!("{what}: {}", cut(&envelope.to_string())),
                }
            }
        }
        OciDistributionError::ServerError { code: 404, .. } => OciError::NotFound {
            reference: reference_text,
            what: what.into(),
        },
        OciDistributionError::ServerError {
            code: 401 | 403,
            message,
            ..
        } => OciError::Credentials {
            reference: reference_text,
            cause: format!("{what}: refused ({})", cut(&message)),
        },
        OciDistributionError::UnauthorizedError { url } => OciError::Credentials {
            reference: reference_text,
            cause: format!("{what}: not authorized at {url}"),
        },
        OciDistributionError::AuthenticationFailure(cause) => OciError::Credentials {
            reference: reference_text,
            cause: format!("{what}: authentication failed: {}", cut(&cause)),
        },
        OciDistributionError::DigestError(DigestError::VerificationError { expected, actual }) => {
            OciError::DigestMismatch {
                reference: reference_text,
                what: what.into(),
                expected,
                actual,
            }
        }
        other => OciError::Registry {
            reference: reference_text,
            cause: format!("{what}: {}", cut(&error_chain(&other))),
        },
    }
}
