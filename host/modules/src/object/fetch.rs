//! A `DecisionModule`'s module bytes, from where its source says: a ConfigMap
//! key read through the API, or an OCI image pulled by `rekon-oci` (with the
//! registry credentials and the signature key read from Secrets). Every
//! failure is a [`Refusal`] that names the source and the cause.

use std::path::PathBuf;

use futures::FutureExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::{Api, Client};
use rekon_oci::{OciError, PullRequest, Puller, Verification};

use crate::digest::ModuleDigest;
use crate::object::resource::{ConfigMapKey, ModuleSource, ObjectName, SecretKey};
use crate::refusal::{Refusal, RefusalReason};
use crate::source::ModuleFile;

/// The key of a `kubernetes.io/dockerconfigjson` Secret.
const DOCKER_CONFIG_KEY: &str = ".dockerconfigjson";

/// Fetches module bytes for objects.
#[derive(Clone)]
pub struct Fetcher {
    client: Client,
    /// Pulls images; without one, image sources are refused.
    puller: Option<Puller>,
    /// The largest module accepted from a ConfigMap (the puller has its own).
    max_bytes: u64,
}

impl Fetcher {
    /// Fetches ConfigMap sources of at most `max_bytes`.
    pub fn new(client: Client, max_bytes: u64) -> Self {
        Self {
            client,
            puller: None,
            max_bytes,
        }
    }

    /// Also pulls image sources with `puller`.
    #[must_use]
    pub fn with_puller(mut self, puller: Puller) -> Self {
        self.puller = Some(puller);
        self
    }

    /// The bytes of `source`, checked against its digests. `field` names it in
    /// messages (`spec.module`, `spec.previous`...).
    pub async fn fetch(&self, field: &str, source: &ModuleSource) -> Result<ModuleFile, Refusal> {
        match (&source.image, &source.config_map) {
            (Some(image), None) => self.pull(field, image, source).boxed().await,
            (None, Some(key)) => {
                self.config_map(field, key, source.sha256.as_deref())
                    .boxed()
                    .await
            }
            _ => Err(Refusal::new(
                RefusalReason::InvalidSpec,
                format!("{field}: give exactly one of `image` and `configMap`"),
            )),
        }
    }

    async fn config_map(
        &self,
        field: &str,
        key: &ConfigMapKey,
        sha256: Option<&str>,
    ) -> Result<ModuleFile, Refusal> {
        let origin = format!("configmap/{}/{}#{}", key.namespace, key.name, key.key);
        let pinned = pinned_digest(field, &origin, sha256)?.ok_or_else(|| {
            Refusal::new(
                RefusalReason::InvalidSpec,
                format!(
                    "{field}: {origin}: `sha256` of the module bytes is required with a ConfigMap"
                ),
            )
        })?;
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &key.namespace);
        let map = api
            .get_opt(&key.name)
            .await
            .map_err(|err| api_failure(&origin, err))?
            .ok_or_else(|| {
                Refusal::new(
                    RefusalReason::NotFound,
                    format!(
                        "{origin}: ConfigMap {}/{} not found",
                        key.namespace, key.name
                    ),
                )
            })?;
        let bytes = map
            .binary_data
            .as_ref()
            .and_then(|d| d.get(&key.key))
            .map(|b| b.0.clone())
            .or_else(|| {
                map.data
                    .as_ref()
                    .and_then(|d| d.get(&key.key))
                    .map(|s| s.clone().into_bytes())
            })
            .ok_or_else(|| {
                let keys: Vec<&String> = map
                    .binary_data
                    .iter()
                    .flat_map(|d| d.keys())
                    .chain(map.data.iter().flat_map(|d| d.keys()))
                    .collect();
                Refusal::new(
                    RefusalReason::NotFound,
                    format!(
                        "{origin}: no key `{}` in the ConfigMap (it has {keys:?})",
                        key.key
                    ),
                )
            })?;
        if bytes.len() as u64 > self.max_bytes {
            return Err(Refusal::new(
                RefusalReason::TooLarge,
                format!(
                    "{origin}: {} bytes, over the limit of {} bytes",
                    bytes.len(),
                    self.max_bytes
                ),
            ));
        }
        let digest = ModuleDigest::of(&bytes);
        if digest != pinned {
            return Err(Refusal::new(
                RefusalReason::DigestMismatch,
                format!(
                    "{origin}: the module has sha256 {digest}, but {field}.sha256 pins {pinned}"
                ),
            ));
        }
        Ok(module_file(&key.key, origin, bytes.into(), digest))
    }

    async fn pull(
        &self,
        field: &str,
        image: &str,
        source: &ModuleSource,
    ) -> Result<ModuleFile, Refusal> {
        pinned_digest(field, image, source.sha256.as_deref())?;
        let Some(puller) = &self.puller else {
            return Err(Refusal::new(
                RefusalReason::RegistryUnreachable,
                format!("{field}: {image}: this rekon has no OCI puller configured"),
            ));
        };
        let registry = rekon_oci::ModuleRef::parse(image)
            .map_err(|err| oci_refusal(field, &err))?
            .registry()
            .to_string();
        let auth = match &source.pull_secret {
            Some(secret) => {
                let config = self
                    .secret_key(image, secret, DOCKER_CONFIG_KEY)
                    .boxed()
                    .await?;
                rekon_oci::auth_from_dockerconfigjson(&config, &registry)
                    .map_err(|err| oci_refusal(field, &err))?
            }
            None => None,
        };
        let verify = match &source.verify {
            None => None,
            Some(verify) => {
                let key = match (&verify.public_key, &verify.public_key_secret) {
                    (Some(pem), None) => pem.clone().into_bytes(),
                    (
                        None,
                        Some(SecretKey {
                            namespace,
                            name,
                            key,
                        }),
                    ) => {
                        let secret = ObjectName {
                            namespace: namespace.clone(),
                            name: name.clone(),
                        };
                        self.secret_key(image, &secret, key).boxed().await?
                    }
                    _ => {
                        return Err(Refusal::new(
                            RefusalReason::InvalidSpec,
                            format!(
                                "{field}.verify: give exactly one of `publicKey` and `publicKeySecret`"
                            ),
                        ));
                    }
                };
                Some(Verification {
                    cosign_public_key_pem: key,
                })
            }
        };
        let request = PullRequest {
            image: image.to_string(),
            sha256: source.sha256.clone(),
            insecure: source.insecure,
            auth,
            verify,
        };
        // rekon-oci's pull future is not Send for every lifetime (a compiler
        // limitation with higher-ranked auto traits), so it runs on its own
        // blocking thread rather than inside this task.
        let (puller, runtime) = (puller.clone(), tokio::runtime::Handle::current());
        let pulled = tokio::task::spawn_blocking(move || runtime.block_on(puller.pull(&request)))
            .await
            .map_err(|panic| {
                Refusal::new(
                    RefusalReason::Internal,
                    format!("{field}: {image}: pull panicked: {panic}"),
                )
            })?
            .map_err(|err| oci_refusal(field, &err))?;
        let digest = ModuleDigest::of(&pulled.bytes);
        let stem = image
            .rsplit('/')
            .next()
            .and_then(|last| last.split(['@', ':']).next())
            .unwrap_or("module");
        let origin = if image.contains('@') {
            image.to_string()
        } else {
            format!("{image}@{}", pulled.manifest_digest)
        };
        Ok(module_file(stem, origin, pulled.bytes, digest))
    }

    /// The value of `key` in a Secret (RBAC: rekon may `get` only the Secrets
    /// its namespaced Role names).
    async fn secret_key(
        &self,
        image: &str,
        secret: &ObjectName,
        key: &str,
    ) -> Result<Vec<u8>, Refusal> {
        let origin = format!("{image}: Secret {}/{}", secret.namespace, secret.name);
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &secret.namespace);
        let found = api
            .get_opt(&secret.name)
            .await
            .map_err(|err| api_failure(&origin, err))?
            .ok_or_else(|| Refusal::new(RefusalReason::NotFound, format!("{origin} not found")))?;
        found
            .data
            .and_then(|mut d| d.remove(key))
            .map(|b| b.0)
            .ok_or_else(|| {
                Refusal::new(
                    RefusalReason::NotFound,
                    format!("{origin} has no key `{key}`"),
                )
            })
    }
}

fn module_file(
    name: &str,
    origin: String,
    bytes: std::sync::Arc<[u8]>,
    digest: ModuleDigest,
) -> ModuleFile {
    let name = name.strip_suffix(".wasm").unwrap_or(name).to_string();
    ModuleFile {
        name,
        path: PathBuf::from(origin),
        bytes,
        digest,
    }
}

fn pinned_digest(
    field: &str,
    origin: &str,
    sha256: Option<&str>,
) -> Result<Option<ModuleDigest>, Refusal> {
    sha256
        .map(|text| {
            text.parse::<ModuleDigest>().map_err(|err| {
                Refusal::new(
                    RefusalReason::InvalidSpec,
                    format!("{field}.sha256 of {origin}: {err}"),
                )
            })
        })
        .transpose()
}

fn api_failure(origin: &str, err: kube::Error) -> Refusal {
    let reason = match &err {
        kube::Error::Api(status) if status.code == 403 => RefusalReason::Unauthorized,
        _ => RefusalReason::RegistryUnreachable,
    };
    Refusal::new(
        reason,
        format!("{origin}: cannot read it from the API server: {err}"),
    )
}

/// The refusal of a failed pull; the message is `rekon-oci`'s, which names
/// the reference and the cause.
fn oci_refusal(field: &str, err: &OciError) -> Refusal {
    let reason = match err {
        OciError::NotFound { .. } => RefusalReason::ManifestNotFound,
        OciError::Unreachable { .. } | OciError::Timeout { .. } | OciError::Registry { .. } => {
            RefusalReason::RegistryUnreachable
        }
        OciError::Credentials { .. } => RefusalReason::Unauthorized,
        OciError::DigestMismatch { .. } => RefusalReason::DigestMismatch,
        OciError::TooLarge { .. } => RefusalReason::TooLarge,
        OciError::PolicyViolation { .. } => RefusalReason::PolicyViolation,
        OciError::NotWasm { .. } => RefusalReason::NotAComponent,
        OciError::Unsigned { .. } | OciError::BadSignature { .. } | OciError::Key { .. } => {
            RefusalReason::BadSignature
        }
        OciError::InvalidReference { .. }
        | OciError::Unpinned { .. }
        | OciError::InsecureRefused { .. } => RefusalReason::InvalidSpec,
        _ => RefusalReason::Internal,
    };
    Refusal::new(reason, format!("{field}: {err}"))
}
