//! One loaded version of a decision module, named by the digest of the module
//! bytes that were pinned and verified (not of their precompiled form).

use std::path::{Path, PathBuf};

use rekon_controllers::decider::{DecideError, Decider, GuestInfo, guest_error};
use rekon_runtime::{GuestId, GuestPre, GuestWorld, Limits, RuntimeError, World};

use crate::digest::ModuleDigest;

pub struct ModuleVersion {
    id: GuestId,
    digest: ModuleDigest,
    path: PathBuf,
    guest: GuestPre,
}

impl ModuleVersion {
    /// `id` must name the module bytes `guest` was compiled from.
    pub(crate) fn new(id: GuestId, path: PathBuf, guest: GuestPre) -> Self {
        let digest = id.digest().parse().expect("GuestId digests are sha256 hex");
        Self {
            id,
            digest,
            path,
            guest,
        }
    }

    pub fn id(&self) -> &GuestId {
        &self.id
    }

    pub fn digest(&self) -> &ModuleDigest {
        &self.digest
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn world(&self) -> World {
        self.guest.world()
    }

    pub fn limits(&self) -> Limits {
        self.guest.limits()
    }

    /// The contract the module exports, e.g. `rekon:reconcile@0.1.0`.
    pub fn contract(&self) -> String {
        self.guest.version().package()
    }

    pub fn guest(&self) -> &GuestPre {
        &self.guest
    }

    pub fn info(&self) -> GuestInfo {
        GuestInfo {
            name: self.id.name().to_string(),
            digest: self.id.digest().to_string(),
        }
    }

    /// Names this version (not the precompiled bytes) in a failure.
    fn error(&self, key: &str, mut err: RuntimeError) -> DecideError {
        err.guest = self.id.clone();
        guest_error(key, err)
    }
}

impl std::fmt::Debug for ModuleVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.id, self.path.display())
    }
}

impl<W: GuestWorld> Decider<W> for ModuleVersion {
    fn info(&self) -> GuestInfo {
        ModuleVersion::info(self)
    }

    fn decide(&self, key: &str, input: W::Input) -> Result<W::Decision, DecideError> {
        self.guest
            .decide::<W>(input)
            .map_err(|e| self.error(key, e))
    }
}
