//! A loaded guest: compiled, checked and resolved against the host imports,
//! ready to be instantiated once per decision.

use std::any::Any;
use std::sync::Arc;

use rekon_contract::{BindWorld, ContractVersion, WorldBinding};
use wasmtime::Store;
use wasmtime::component::InstancePre;

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
    version: &'static ContractVersion,
    limits: Limits,
    /// For instantiation alone (health checks, benches), whatever the world.
    pre: InstancePre<DecisionState>,
    /// An `Arc<dyn WorldBinding<W, DecisionState>>` for the guest's world `W`.
    bound: Arc<dyn Any + Send + Sync>,
    engine: Engine,
    /// Whether an instance was made yet: the first one creates the module's
    /// memory images, which can fail transiently (see `decide::instantiate`).
    pub(crate) primed: Arc<std::sync::atomic::AtomicBool>,
}

/// The world binding of a component, type-erased so a `GuestPre` is one type.
pub(crate) struct Bound {
    pub(crate) version: &'static ContractVersion,
    pub(crate) binding: Arc<dyn Any + Send + Sync>,
}

impl Bound {
    /// Binds `pre` as world `W` at `version`; `None` if the host does not bind it.
    pub(crate) fn new<W: BindWorld>(
        version: &str,
        pre: InstancePre<DecisionState>,
    ) -> Option<wasmtime::Result<Self>> {
        let bound = W::bind::<DecisionState>(version, pre)?;
        Some(bound.map(|binding| Self {
            version: binding.version(),
            binding: Arc::new(binding),
        }))
    }
}

impl GuestPre {
    pub(crate) fn new(
        id: GuestId,
        world: World,
        limits: Limits,
        pre: InstancePre<DecisionState>,
        bound: Bound,
        engine: Engine,
    ) -> Self {
        Self {
            id,
            world,
            version: bound.version,
            limits,
            pre,
            bound: bound.binding,
            engine,
            primed: Arc::default(),
        }
    }

    pub fn id(&self) -> &GuestId {
        &self.id
    }

    pub fn world(&self) -> World {
        self.world
    }

    /// The contract version the component exports: `version().version` is the
    /// semver (`"0.1.0"`), for logs, the status file, metric labels and `rekon eval`.
    pub fn version(&self) -> &'static ContractVersion {
        self.version
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The binding of world `W`, if this guest is a `W` guest.
    pub(crate) fn binding<W: BindWorld>(&self) -> Option<&Arc<dyn WorldBinding<W, DecisionState>>> {
        self.bound.downcast_ref()
    }

    pub(crate) fn instance_pre(&self) -> &InstancePre<DecisionState> {
        &self.pre
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
