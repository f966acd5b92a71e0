//! The guests, compiled once for the whole campaign, and the bad module.

use std::sync::Arc;

use rekon_contract::{PvcProtectionWorld, ResourceClaimWorld};
use rekon_controllers::decider::{DecideError, Decider, GuestInfo, Slot};
use rekon_guest::model::{PvcDecision, PvcInput};
use rekon_runtime::testing::built_guest;
use rekon_runtime::{Engine, EngineConfig, World};
use rekon_simulate::Deciders;

use crate::plan::Misbehaviour;

pub struct Guests {
    pvc: Arc<dyn Decider<PvcProtectionWorld>>,
    claim: Arc<dyn Decider<ResourceClaimWorld>>,
    misbehaving: Arc<dyn Decider<PvcProtectionWorld>>,
}

impl Guests {
    pub fn load() -> Self {
        let engine = Engine::new(EngineConfig::default()).expect("engine");
        let load = |world, stem: &str| {
            engine
                .loader()
                .world(world)
                .file(built_guest(stem))
                .unwrap_or_else(|e| panic!("{stem} (run `make guests`): {e}"))
        };
        Self {
            pvc: Arc::new(load(
                World::of::<rekon_contract::PvcProtectionWorld>(),
                "rekon_guest_pvc_protection",
            )),
            claim: Arc::new(load(
                World::of::<rekon_contract::ResourceClaimWorld>(),
                "rekon_guest_resource_claim",
            )),
            misbehaving: Arc::new(load(
                World::of::<rekon_contract::PvcProtectionWorld>(),
                "rekon_guest_misbehaving",
            )),
        }
    }

    /// Fresh slots holding the reference guests (one set per run).
    pub fn deciders(&self) -> Deciders {
        Deciders::new()
            .with(Arc::new(Slot::new(self.pvc.clone())))
            .with(Arc::new(Slot::new(self.claim.clone())))
    }

    pub fn good_pvc(&self) -> Arc<dyn Decider<PvcProtectionWorld>> {
        self.pvc.clone()
    }

    pub fn bad_pvc(&self, behaviour: Misbehaviour) -> Arc<dyn Decider<PvcProtectionWorld>> {
        Arc::new(Misbehaving {
            guest: self.misbehaving.clone(),
            behaviour,
        })
    }
}

/// The misbehaving component, made to misbehave on every input: it decides as
/// if every PVC had the name that selects `behaviour`.
struct Misbehaving {
    guest: Arc<dyn Decider<PvcProtectionWorld>>,
    behaviour: Misbehaviour,
}

impl Decider<PvcProtectionWorld> for Misbehaving {
    fn info(&self) -> GuestInfo {
        self.guest.info()
    }

    fn decide(&self, key: &str, mut input: PvcInput) -> Result<PvcDecision, DecideError> {
        input.pvc.meta.name = self.behaviour.pvc_name().to_string();
        self.guest.decide(key, input)
    }
}

/// Clones of another run's slots, for a second replica or a restarted host.
pub fn share(deciders: &Deciders) -> Deciders {
    deciders.clone()
}
