//! The wasmtime bindings of every supported `rekon:reconcile` version.
//!
//! Each supported version gets its own module (`v0_1_0`, `v0_2_0`, …) holding one
//! `bindgen!` per world. The worlds of one version share their `types` and `log`
//! interfaces: they are generated once (from the `guest-imports` world) and reused
//! through `with:`, so a `Pod` is the same Rust type in both worlds. (Bound from
//! `wit/`, whose `deps/` holds 0.1.0 too, bindgen names the 0.2.0 package module
//! `reconcile0_2_0`.)
//!
//! Every version converts from the one plain model ([`rekon_guest::model`], what
//! the host's caches hold) and back: 0.1.0 moves the model field for field, 0.2.0
//! first projects it to what each decision reads ([`rekon_guest::projection`]).
//! [`crate::binding`] then binds each (world, version) once, so nothing above the
//! runtime sees a version.

/// A contract version the host can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContractVersion {
    /// The semver of the `rekon:reconcile` package.
    pub version: &'static str,
}

impl ContractVersion {
    /// `rekon:reconcile@0.2.0`: the package and version, for logs, status and labels.
    pub fn package(&self) -> String {
        format!("{PACKAGE}@{}", self.version)
    }

    /// The versioned name of `interface` (`rekon:reconcile/pvc-decider@0.2.0`).
    pub fn export(&self, interface: &str) -> String {
        format!("{PACKAGE}/{interface}@{}", self.version)
    }

    /// The supported version of this semver, if the host binds it.
    pub fn find(version: &str) -> Option<&'static ContractVersion> {
        SUPPORTED_VERSIONS.iter().find(|v| v.version == version)
    }
}

impl std::fmt::Display for ContractVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.version)
    }
}

/// The package every version belongs to.
pub const PACKAGE: &str = "rekon:reconcile";

/// Every contract version this host binds, newest first.
pub const SUPPORTED_VERSIONS: &[ContractVersion] = &[
    crate::controller::v0_3_0::VERSION,
    v0_2_0::VERSION,
    v0_1_0::VERSION,
];

/// Bindings of `rekon:reconcile@0.2.0` (wit/ at the repository root).
pub mod v0_2_0 {
    use super::ContractVersion;
    use rekon_guest::{model, projection};

    pub const VERSION: ContractVersion = ContractVersion { version: "0.2.0" };

    /// The shared `types` and the host-implemented `log` interface.
    pub mod shared {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: "rekon:reconcile/guest-imports@0.2.0",
        });
    }

    /// The pvc-protection world: exports `pvc-decider`.
    pub mod pvc {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: "rekon:reconcile/pvc-protection@0.2.0",
            with: {
                "rekon:reconcile/types@0.2.0": super::shared::rekon::reconcile0_2_0::types,
                "rekon:reconcile/log@0.2.0": super::shared::rekon::reconcile0_2_0::log,
            },
        });
    }

    /// The resource-claim world: exports `claim-decider`.
    pub mod claim {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: "rekon:reconcile/resource-claim@0.2.0",
            with: {
                "rekon:reconcile/types@0.2.0": super::shared::rekon::reconcile0_2_0::types,
                "rekon:reconcile/log@0.2.0": super::shared::rekon::reconcile0_2_0::log,
            },
        });
    }

    pub use claim::exports::rekon::reconcile0_2_0::claim_decider;
    pub use pvc::exports::rekon::reconcile0_2_0::pvc_decider;
    pub use shared::rekon::reconcile0_2_0::{log, types};

    rekon_guest::impl_contract_conversions!(
        v0_2_0: types = shared::rekon::reconcile0_2_0::types,
        pvc = pvc::exports::rekon::reconcile0_2_0::pvc_decider,
        claim = claim::exports::rekon::reconcile0_2_0::claim_decider,
    );

    // Adapting the host's model: project, then move into the generated types.
    impl From<model::PvcInput> for pvc_decider::PvcInput {
        fn from(input: model::PvcInput) -> Self {
            projection::pvc::PvcInput::from(input).into()
        }
    }

    impl From<model::ClaimInput> for claim_decider::ClaimInput {
        fn from(input: model::ClaimInput) -> Self {
            projection::claim::ClaimInput::from(input).into()
        }
    }
}

/// Bindings of `rekon:reconcile@0.1.0` (wit/deps/rekon-reconcile@0.1.0, frozen).
pub mod v0_1_0 {
    use super::ContractVersion;

    pub const VERSION: ContractVersion = ContractVersion { version: "0.1.0" };

    /// The shared `types` and the host-implemented `log` interface.
    pub mod shared {
        wasmtime::component::bindgen!({
            path: "../../wit/deps/rekon-reconcile@0.1.0",
            world: "rekon:reconcile/guest-imports@0.1.0",
        });
    }

    /// The pvc-protection world: exports `pvc-decider`.
    pub mod pvc {
        wasmtime::component::bindgen!({
            path: "../../wit/deps/rekon-reconcile@0.1.0",
            world: "rekon:reconcile/pvc-protection@0.1.0",
            with: {
                "rekon:reconcile/types": super::shared::rekon::reconcile::types,
                "rekon:reconcile/log": super::shared::rekon::reconcile::log,
            },
        });
    }

    /// The resource-claim world: exports `claim-decider`.
    pub mod claim {
        wasmtime::component::bindgen!({
            path: "../../wit/deps/rekon-reconcile@0.1.0",
            world: "rekon:reconcile/resource-claim@0.1.0",
            with: {
                "rekon:reconcile/types": super::shared::rekon::reconcile::types,
                "rekon:reconcile/log": super::shared::rekon::reconcile::log,
            },
        });
    }

    pub use claim::exports::rekon::reconcile::claim_decider;
    pub use pvc::exports::rekon::reconcile::pvc_decider;
    pub use shared::rekon::reconcile::{log, types};

    rekon_guest::impl_contract_conversions!(
        types = shared::rekon::reconcile::types,
        pvc = pvc::exports::rekon::reconcile::pvc_decider,
        claim = claim::exports::rekon::reconcile::claim_decider,
    );
}
