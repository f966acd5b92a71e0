//! Module references: `[oci://|http://|https://]REGISTRY/REPO(:TAG|@sha256:DIGEST)`,
//! and which registries may be spoken to in plain HTTP.

use std::fmt;
use std::net::IpAddr;

use crate::error::OciError;

/// Which scheme a reference asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// No scheme or `oci://`: HTTPS, falling back to HTTP where plain HTTP is allowed.
    Any,
    /// `https://`: HTTPS only.
    Https,
    /// `http://`: plain HTTP only (loopback or insecure).
    Http,
}

/// A parsed module reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleRef {
    text: String,
    scheme: Scheme,
    inner: oci_client::Reference,
}

impl ModuleRef {
    /// Parses `text`; an `oci://`, `http://` or `https://` prefix is allowed.
    pub fn parse(text: &str) -> Result<Self, OciError> {
        let trimmed = text.trim();
        let (scheme, rest) = if let Some(rest) = trimmed.strip_prefix("oci://") {
            (Scheme::Any, rest)
        } else if let Some(rest) = trimmed.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else if let Some(rest) = trimmed.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else {
            (Scheme::Any, trimmed)
        };
        let inner: oci_client::Reference = rest.parse().map_err(|err| OciError::InvalidReference {
            reference: text.to_string(),
            reason: format!("{err}"),
        })?;
        Ok(Self { text: trimmed.to_string(), scheme, inner })
    }

    /// The registry host (and port), as written.
    pub fn registry(&self) -> &str {
        self.inner.registry()
    }

    /// The repository path inside the registry.
    pub fn repository(&self) -> &str {
        self.inner.repository()
    }

    /// The tag, if the reference names one.
    pub fn tag(&self) -> Option<&str> {
        self.inner.tag()
    }

    /// The manifest digest (`sha256:...`), if the reference is pinned by one.
    pub fn digest(&self) -> Option<&str> {
        self.inner.digest()
    }

    /// The scheme the reference asked for.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The reference as written (trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// `REGISTRY/REPO@DIGEST`, without tag or scheme.
    pub fn with_digest(&self, digest: &str) -> String {
        format!("{}/{}@{}", self.registry(), self.repository(), digest)
    }

    pub(crate) fn oci(&self) -> &oci_client::Reference {
        &self.inner
    }

    /// Whether plain HTTP may be used: loopback registries always, others only when `insecure`.
    pub(crate) fn allows_plain_http(&self, insecure: bool) -> bool {
        insecure || is_loopback_registry(self.registry())
    }
}

impl fmt::Display for ModuleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether `registry` (`host` or `host:port`) is on loopback: `localhost`,
/// 127.0.0.0/8 or `::1`. Container runtimes allow plain HTTP to these by default.
pub fn is_loopback_registry(registry: &str) -> bool {
    let host = if let Some(bracketed) = registry.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or_default()
    } else if registry.matches(':').count() > 1 {
        registry // a bare IPv6 address
    } else {
        registry.split(':').next().unwrap_or_default()
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_registries_are_recognised_with_and_without_ports() {
        for yes in ["localhost", "localhost:5000", "127.0.0.1:5000", "127.9.9.9", "[::1]:5000", "::1"] {
            assert!(is_loopback_registry(yes), "{yes}");
        }
        for no in ["registry.example.com", "10.0.0.1:5000", "localhost.example.com", "[::2]:5000"] {
            assert!(!is_loopback_registry(no), "{no}");
        }
    }

    #[test]
    fn a_reference_keeps_its_scheme_tag_and_digest() {
        let by_tag = ModuleRef::parse("http://127.0.0.1:5000/team/pvc:v1").unwrap();
        assert_eq!(by_tag.scheme(), Scheme::Http);
        assert_eq!(by_tag.registry(), "127.0.0.1:5000");
        assert_eq!(by_tag.repository(), "team/pvc");
        assert_eq!(by_tag.tag(), Some("v1"));
        let digest = format!("sha256:{}", "a".repeat(64));
        let by_digest = ModuleRef::parse(&format!("oci://registry.example.com/pvc@{digest}")).unwrap();
        assert_eq!(by_digest.scheme(), Scheme::Any);
        assert_eq!(by_digest.digest(), Some(digest.as_str()));
    }

    #[test]
    fn a_malformed_reference_is_refused_with_its_text() {
        let err = ModuleRef::parse("Registry.example.com/UPPER case").unwrap_err();
        assert!(err.to_string().contains("UPPER case"), "{err}");
    }
}
