//! A loaded guest: compiled, checked and resolved against the host imports,
//! ready to be instantiated once per decision.

use rekon_contract::ContractVersion;
use rekon_contract::bindings::v0_1_0;
use wasmtime::Store;

use crate::engine::Engine;
use crate::id::GuestId;
use crate::limits::Limits;
use crate::state::DecisionState;
use crate::world::World;

/// "Resolved but not instantiated": every decision instantiates it into a fresh
/// store. Cloning is cheap (the compiled code is shared).
#[derive(Clone)]
pub struct GuestPre {
    id: GuestId,
    world: World,
    version: ContractVersion,
    limits: Limits,
    pub(crate) bound: Bound,
    engine: Engine,
}

/// The generated `*Pre` of each (world, contract version) the host binds.
/// A new supported version adds its variants here and in the calls.
#[derive(Clone)]
pub(crate) enum Bound {
    PvcV0_1(v0_1_0::pvc::PvcProtectionPre<DecisionState>),
    ClaimV0_1(v0_1_0::claim::ResourceClaimPre<DecisionState>),
}

impl GuestPre {
    pub(crate) fn new(
        id: GuestId,
        world: World,
        version: ContractVersion,
        limits: Limits,
        bound: Bound,
        engine: Engine,
    ) -> Self {
        Self {
            id,
            world,
            version,
            limits,
            bound,
            engine,
        }
    }

    pub fn id(&self) -> &GuestId {
        &self.id
    }

    pub fn world(&self) -> World {
        self.world
    }

    /// The contract version the component exports.
    pub fn version(&self) -> &ContractVersion {
        &self.version
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// A fresh store for one decision: its own WASI context, memory cap and deadline.
    pub(crate) fn new_store(&self) -> Store<DecisionState> {
        let state = DecisionState::new(self.id.clone(), self.limits.memory_bytes);
        let mut store = Store::new(self.engine.wasmtime(), state);
        store.limiter(|state| &mut state.limiter);
        store.set_hostcall_fuel(self.limits.result_bytes);
        store.set_epoch_deadline(self.limits.deadline_ticks());
        store.epoch_deadline_trap();
        store
    }
}

impl std::fmt::Debug for GuestPre {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestPre")
            .field("id", &self.id.to_string())
            .field("world", &self.world)
            .field("version", &self.version.version)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}
