//! The sha256 digest that pins a module: parsed from guests.yaml, computed from
//! the bytes, compared before anything is compiled.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

/// A sha256 digest as 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleDigest(String);

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("`{0}` is not a sha256 digest: expected 64 hex digits, optionally prefixed `sha256:`")]
pub struct DigestError(String);

impl ModuleDigest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(hex::encode(Sha256::digest(bytes)))
    }

    pub fn hex(&self) -> &str {
        &self.0
    }

    /// The first 12 hex digits, for log lines.
    pub fn short(&self) -> &str {
        &self.0[..12]
    }
}

impl fmt::Display for ModuleDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for ModuleDigest {
    type Err = DigestError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let hex = text.trim().strip_prefix("sha256:").unwrap_or(text.trim());
        if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(Self(hex.to_ascii_lowercase()))
        } else {
            Err(DigestError(text.to_string()))
        }
    }
}

impl<'de> serde::Deserialize<'de> for ModuleDigest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for ModuleDigest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn parses_bare_and_prefixed_hex_in_any_case() {
        let digest = ModuleDigest::of(b"abc");
        assert_eq!(digest.hex(), ABC);
        assert_eq!(ABC.parse::<ModuleDigest>().unwrap(), digest);
        assert_eq!(
            format!("sha256:{}", ABC.to_uppercase())
                .parse::<ModuleDigest>()
                .unwrap(),
            digest
        );
        assert_eq!(digest.short(), "ba7816bf8f01");
    }

    #[test]
    fn rejects_what_is_not_64_hex_digits() {
        for bad in [
            "",
            "sha256:",
            "abc",
            &ABC[..63],
            &format!("{}0", ABC),
            &ABC.replace('b', "g"),
        ] {
            let err = bad.parse::<ModuleDigest>().unwrap_err();
            assert!(err.to_string().contains("64 hex digits"), "{err}");
        }
    }
}
