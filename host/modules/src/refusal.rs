//! Why a module was refused, as a machine-readable reason (the `reason` of a
//! `DecisionModule`'s `Ready` condition) beside the message for people.

use crate::load::LoadError;

/// The cause of a refusal. Whatever served before keeps serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalReason {
    /// The spec or guests.yaml is invalid (a field, a missing `sha256`...).
    InvalidSpec,
    /// The module's bytes could not be read (file, ConfigMap or key missing).
    NotFound,
    /// The image's manifest, or the digest it is pinned by, is not in the registry.
    ManifestNotFound,
    RegistryUnreachable,
    /// The registry refused the credentials, or none were given.
    Unauthorized,
    DigestMismatch,
    TooLarge,
    /// The signature is missing or does not verify with the key.
    BadSignature,
    /// The host's policy refuses it, whatever the object names: a registry not
    /// in `--allowed-registries`, plain HTTP to a registry not in
    /// `--insecure-registry`, no signature a `--verification-key` verifies.
    PolicyViolation,
    NotAComponent,
    WrongWorld,
    UnknownContractVersion,
    /// Imports something the host does not provide.
    CannotLink,
    InstantiationFailed,
    /// Trapped or overran a limit on a recent input (canary replay).
    CanaryFailed,
    /// Another `DecisionModule` already names the world.
    DuplicateWorld,
    /// This build was rolled back automatically before.
    RolledBackBefore,
    /// A controller module's description is not one the host can run.
    InvalidDescription,
    /// A controller module describes another controller than the object names,
    /// or a shadow (a rollback target) describes it otherwise than the version serving.
    WrongController,
    /// A controller module asks for more than the scope its object pins.
    ScopeNotAllowed,
    /// Loading panicked.
    Internal,
}

impl RefusalReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalReason::InvalidSpec => "InvalidSpec",
            RefusalReason::NotFound => "NotFound",
            RefusalReason::ManifestNotFound => "ManifestNotFound",
            RefusalReason::RegistryUnreachable => "RegistryUnreachable",
            RefusalReason::Unauthorized => "Unauthorized",
            RefusalReason::DigestMismatch => "DigestMismatch",
            RefusalReason::TooLarge => "TooLarge",
            RefusalReason::BadSignature => "BadSignature",
            RefusalReason::PolicyViolation => "PolicyViolation",
            RefusalReason::NotAComponent => "NotAComponent",
            RefusalReason::WrongWorld => "WrongWorld",
            RefusalReason::UnknownContractVersion => "UnknownContractVersion",
            RefusalReason::CannotLink => "CannotLink",
            RefusalReason::InstantiationFailed => "InstantiationFailed",
            RefusalReason::CanaryFailed => "CanaryFailed",
            RefusalReason::DuplicateWorld => "DuplicateWorld",
            RefusalReason::RolledBackBefore => "RolledBackBefore",
            RefusalReason::InvalidDescription => "InvalidDescription",
            RefusalReason::WrongController => "WrongController",
            RefusalReason::ScopeNotAllowed => "ScopeNotAllowed",
            RefusalReason::Internal => "Internal",
        }
    }

    /// Worth trying again later with the same spec (the registry may come back).
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            RefusalReason::RegistryUnreachable
                | RefusalReason::NotFound
                | RefusalReason::ManifestNotFound
                | RefusalReason::Unauthorized
        )
    }

    /// The reason of a load failure.
    pub fn of_load(err: &LoadError) -> Self {
        use rekon_runtime::LoadError as Check;
        match err {
            LoadError::Check(check) => match check {
                Check::Read { .. } => RefusalReason::NotFound,
                Check::CoreModule { .. } | Check::Precompiled { .. } | Check::Compile { .. } => {
                    RefusalReason::NotAComponent
                }
                Check::NoSupportedWorld { .. } | Check::AmbiguousWorld { .. } => {
                    RefusalReason::WrongWorld
                }
                Check::UnsupportedVersion { .. } => RefusalReason::UnknownContractVersion,
                Check::Link { .. } => RefusalReason::CannotLink,
                Check::MemoryCapTooLarge { .. } => RefusalReason::InvalidSpec,
            },
            LoadError::Compile { .. } => RefusalReason::NotAComponent,
            LoadError::Unhealthy { .. } => RefusalReason::InstantiationFailed,
        }
    }
}

impl std::fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: its reason, and a message naming the module and the cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    pub reason: RefusalReason,
    pub message: String,
}

impl Refusal {
    pub fn new(reason: RefusalReason, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}
