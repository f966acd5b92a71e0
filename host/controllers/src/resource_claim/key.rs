//! Work-queue keys of the resource-claim controller: `pod:<ns>/<name>` and
//! `claim:<ns>/<name>` share one queue (upstream-behaviour §3).

use std::fmt;

use crate::cache::ObjectKey;

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClaimControllerKey {
    Pod(ObjectKey),
    Claim(ObjectKey),
}

impl ClaimControllerKey {
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
