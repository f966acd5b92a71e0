//! The wasmtime bindings of every supported `rekon:reconcile` version.
//!
//! Each supported version gets its own module (`v0_1_0`, later `v0_2_0` …) holding one
//! `bindgen!` per world. The worlds of one version share their `types` and `log`
//! interfaces: they are generated once (from the `guest-imports` world) and reused
//! through `with:`, so a `Pod` is the same Rust type in both worlds.
//!
//! Every version converts to and from the one plain model ([`rekon_guest::model`]);
//! the host decides on model values and moves them into the generated types only at
//! the call. A future version whose types differ binds its own conversions here and
//! adapts to the model, so nothing above the runtime sees the version.

/// A contract version the host can run, with the names a component must export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContractVersion {
    /// The semver of the `rekon:reconcile` package.
    pub version: &'static str,
    /// The exported interface of the pvc-protection world.
    pub pvc_decider: &'static str,
    /// The exported interface of the resource-claim world.
    pub claim_decider: &'static str,
}

/// The package every version belongs to.
pub const PACKAGE: &str = "rekon:reconcile";

/// Every contract version this host binds, newest first.
pub const SUPPORTED_VERSIONS: &[ContractVersion] = &[v0_1_0::VERSION];

/// Bindings of `rekon:reconcile@0.1.0` (wit/deps/rekon-reconcile@0.1.0, frozen).
pub mod v0_1_0 {
    use super::ContractVersion;

    pub const VERSION: ContractVersion = ContractVersion {
        version: "0.1.0",
        pvc_decider: "rekon:reconcile/pvc-decider@0.1.0",
        claim_decider: "rekon:reconcile/claim-decider@0.1.0",
    };

    /// The fully qualified world names.
    pub const PVC_PROTECTION_WORLD: &str = "rekon:reconcile/pvc-protection@0.1.0";
    pub const RESOURCE_CLAIM_WORLD: &str = "rekon:reconcile/resource-claim@0.1.0";

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
