//! The host's policy for pulls, whatever an object names: which registries may
//! be pulled from, which may be reached over plain HTTP, and which keys must
//! have signed a module. An object can ask for less trust only where the host
//! allows it (its `insecure: true` is refused unless the host lists the
//! registry); it cannot loosen the host's requirements. Kubewarden's
//! policy-server is the model: `sources.yaml` holds insecure registries per
//! registry, and `--verification-path` refuses what it cannot verify.

use p256::ecdsa::VerifyingKey;

use crate::cosign;
use crate::error::OciError;
use crate::reference::{ModuleRef, Scheme, is_loopback_registry};

/// What the host requires of every pull. The default allows every registry,
/// plain HTTP to loopback only, and no signature.
#[derive(Debug, Clone, Default)]
pub struct HostPolicy {
    /// Registries (`host[:port]`) that may be reached over plain HTTP besides
    /// loopback ones (HTTPS is tried first).
    pub insecure_registries: Vec<String>,
    /// When given, the only registries (`host[:port]`) pulled from.
    pub allowed_registries: Option<Vec<String>>,
    /// Public keys (cosign, ECDSA P-256 PEM); when any is given, every module
    /// must carry a signature that one of them verifies.
    pub verification_keys: Vec<Vec<u8>>,
}

/// A [`HostPolicy`] with its keys read.
pub(crate) struct Policy {
    insecure_registries: Vec<String>,
    allowed_registries: Option<Vec<String>>,
    keys: Vec<VerifyingKey>,
}

impl Policy {
    pub(crate) fn new(policy: &HostPolicy) -> Result<Self, OciError> {
        let keys = policy
            .verification_keys
            .iter()
            .enumerate()
            .map(|(index, pem)| {
                cosign::public_key(pem).map_err(|err| OciError::Key {
                    what: format!("verification key #{}", index + 1),
                    cause: err.to_string(),
                })
            })
            .collect::<Result<_, _>>()?;
        let lower = |list: &[String]| -> Vec<String> {
            list.iter().map(|r| r.trim().to_ascii_lowercase()).collect()
        };
        Ok(Self {
            insecure_registries: lower(&policy.insecure_registries),
            allowed_registries: policy.allowed_registries.as_deref().map(lower),
            keys,
        })
    }

    /// The keys of which one must verify every module (empty: none required).
    pub(crate) fn keys(&self) -> &[VerifyingKey] {
        &self.keys
    }

    /// Whether the host lets rekon speak plain HTTP to `registry`.
    pub(crate) fn allows_plain_http(&self, registry: &str) -> bool {
        is_loopback_registry(registry)
            || self
                .insecure_registries
                .contains(&registry.to_ascii_lowercase())
    }

    /// Refuses, before any network I/O, a module from a registry the host does
    /// not allow, or one asking plain HTTP (`insecure: true` or `http://`) to a
    /// registry the host does not list as insecure.
    pub(crate) fn admit(&self, module: &ModuleRef, insecure: bool) -> Result<(), OciError> {
        let registry = module.registry();
        let violation = |rule: String| OciError::PolicyViolation {
            reference: module.to_string(),
            rule,
        };
        if let Some(allowed) = &self.allowed_registries
            && !allowed.contains(&registry.to_ascii_lowercase())
        {
            return Err(violation(format!(
                "registry {registry} is not one this host allows (--allowed-registries {})",
                allowed.join(",")
            )));
        }
        let asks_plain = insecure || module.scheme() == Scheme::Http;
        if asks_plain && !self.allows_plain_http(registry) {
            let asked = if insecure {
                "`insecure: true` asks"
            } else {
                "`http://` asks"
            };
            return Err(violation(format!(
                "{asked} for plain HTTP to registry {registry}, which this host does not allow (only loopback registries and those given with --insecure-registry)"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(insecure: &[&str], allowed: Option<&[&str]>) -> Policy {
        Policy::new(&HostPolicy {
            insecure_registries: insecure.iter().map(|s| s.to_string()).collect(),
            allowed_registries: allowed.map(|a| a.iter().map(|s| s.to_string()).collect()),
            verification_keys: Vec::new(),
        })
        .unwrap()
    }

    fn module(text: &str) -> ModuleRef {
        ModuleRef::parse(text).unwrap()
    }

    #[test]
    fn plain_http_is_the_hosts_choice_per_registry() {
        let host = policy(&["Registry.Lab:5000"], None);
        host.admit(&module("registry.lab:5000/a:v1"), true).unwrap();
        host.admit(&module("127.0.0.1:5000/a:v1"), true).unwrap();
        let err = host
            .admit(&module("registry.example.com/a:v1"), true)
            .unwrap_err();
        assert_eq!(err.reason(), "PolicyViolation");
        assert!(
            err.to_string().contains("`insecure: true` asks")
                && err.to_string().contains("--insecure-registry"),
            "{err}"
        );
        let err = host
            .admit(&module("http://registry.example.com/a:v1"), false)
            .unwrap_err();
        assert!(err.to_string().contains("`http://` asks"), "{err}");
        host.admit(&module("registry.example.com/a:v1"), false)
            .unwrap();
    }

    #[test]
    fn only_allowed_registries_are_pulled_from() {
        let host = policy(&[], Some(&["registry.example.com", "127.0.0.1:5000"]));
        host.admit(&module("registry.example.com/a:v1"), false)
            .unwrap();
        let err = host
            .admit(&module("evil.example.com/registry.example.com:v1"), false)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("registry evil.example.com is not one this host allows"),
            "{err}"
        );
    }

    #[test]
    fn an_unreadable_verification_key_is_named() {
        let err = Policy::new(&HostPolicy {
            verification_keys: vec![b"not a key".to_vec()],
            ..HostPolicy::default()
        })
        .err()
        .unwrap();
        assert!(err.to_string().contains("verification key #1"), "{err}");
    }
}
