//! The identity of a loaded guest: a name people recognise and the digest of
//! the exact bytes, so a log line or error tells which build misbehaved.

use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// How many hex digits of the digest errors and logs show.
const SHORT_DIGEST: usize = 12;

/// Name plus sha256 of a guest's component bytes. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GuestId(Arc<IdParts>);

#[derive(Debug, PartialEq, Eq, Hash)]
struct IdParts {
    name: String,
    digest: String,
}

impl GuestId {
    /// Names the guest `name` and digests `bytes`.
    pub fn of(name: impl Into<String>, bytes: &[u8]) -> Self {
        Self(Arc::new(IdParts {
            name: name.into(),
            digest: hex::encode(Sha256::digest(bytes)),
        }))
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The full sha256 digest, lowercase hex.
    pub fn digest(&self) -> &str {
        &self.0.digest
    }

    pub fn short_digest(&self) -> &str {
        &self.0.digest[..SHORT_DIGEST]
    }
}

impl fmt::Display for GuestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@sha256:{}", self.name(), self.short_digest())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_name_and_short_digest() {
        let id = GuestId::of("pvc", b"abc");
        // sha256("abc")
        assert_eq!(
            id.digest(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(id.to_string(), "pvc@sha256:ba7816bf8f01");
    }
}
