//! Work-queue keys of the resource-claim controller: `pod:<ns>/<name>` and
//! `claim:<ns>/<name>` share one queue (upstream-behaviour §3).

use std::fmt;

use crate::cache::ObjectKey;

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClaimControllerKey {
    Pod(ObjectKey),
    Claim(ObjectKey),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    #[error(
        "work-queue key {0:?} has no kind prefix (expected pod:<ns>/<name> or claim:<ns>/<name>)"
    )]
    MissingPrefix(String),
    #[error("work-queue key {0:?} has an unknown kind prefix (expected pod: or claim:)")]
    UnknownPrefix(String),
    #[error("work-queue key {0:?} is not <ns>/<name>")]
    BadObjectKey(String),
}

impl ClaimControllerKey {
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let (kind, rest) = text
            .split_once(':')
            .ok_or_else(|| KeyError::MissingPrefix(text.to_string()))?;
        let object =
            ObjectKey::parse(rest).ok_or_else(|| KeyError::BadObjectKey(text.to_string()))?;
        match kind {
            "pod" => Ok(Self::Pod(object)),
            "claim" => Ok(Self::Claim(object)),
            _ => Err(KeyError::UnknownPrefix(text.to_string())),
        }
    }

    pub fn object(&self) -> &ObjectKey {
        match self {
            Self::Pod(k) | Self::Claim(k) => k,
        }
    }
}

impl fmt::Display for ClaimControllerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Pod(k) => write!(f, "pod:{k}"),
            Self::Claim(k) => write!(f, "claim:{k}"),
        }
    }
}

impl fmt::Debug for ClaimControllerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_bad_keys_are_errors() {
        for text in ["pod:ns/a", "claim:ns/b"] {
            assert_eq!(ClaimControllerKey::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(
            ClaimControllerKey::parse("ns/a"),
            Err(KeyError::MissingPrefix("ns/a".into()))
        );
        assert_eq!(
            ClaimControllerKey::parse("node:ns/a"),
            Err(KeyError::UnknownPrefix("node:ns/a".into()))
        );
        assert!(matches!(
            ClaimControllerKey::parse("pod:a"),
            Err(KeyError::BadObjectKey(_))
        ));
    }
}
