//! `rekon:reconcile/ephemeral-volume` (0.2.0 on): which PVCs a pod's ephemeral
//! volumes still need. The whole world in one module: its marker type, its
//! bindings and their binding; `crate::visit_worlds` lists it.

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::InstancePre;

use crate::binding::{BindWorld, Bound, CallError, WorldBinding, bind_world};
use crate::bindings::ContractVersion;
use crate::world::WitWorld;

/// The world's marker type.
#[derive(Debug, Clone, Copy, Default)]
pub struct EphemeralVolumeWorld;

impl WitWorld for EphemeralVolumeWorld {
    const NAME: &'static str = "ephemeral-volume";
    const EXPORT: &'static str = "volume-decider";
    const FUNCTIONS: &'static [&'static str] = &["decide"];
    type Input = rekon_guest::ephemeral::VolumeInput;
    type Decision = rekon_guest::ephemeral::VolumeDecision;

    fn function(_: &Self::Input) -> &'static str {
        "decide"
    }
}

/// The bindings at `rekon:reconcile@0.2.0`.
pub mod v0_2_0 {
    pub use crate::bindings::v0_2_0::VERSION;

    /// Exports `volume-decider`; imports the version's shared `log`.
    pub mod ephemeral {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: "rekon:reconcile/ephemeral-volume@0.2.0",
            with: {
                "rekon:reconcile/log@0.2.0": crate::bindings::v0_2_0::shared::rekon::reconcile0_2_0::log,
            },
        });
    }

    pub use ephemeral::exports::rekon::reconcile0_2_0::volume_decider;
    rekon_guest::impl_ephemeral_conversions!(volume_decider);
}

bind_world! {
    world: EphemeralVolumeWorld,
    pre: ephemeral::EphemeralVolumePre,
    versions: [v0_2_0 => rekon_reconcile0_2_0_volume_decider],
    call: { call_decide },
}
