//! The guest slot publishes only healthy guests of its own world.

use rekon_runtime::registry::{GuestSlot, RegistryError};
use rekon_runtime::testing::built_guest;
use rekon_runtime::{Engine, EngineConfig, World};

#[test]
fn publish_swaps_in_same_world_guests_only() {
    let engine = Engine::new(EngineConfig {
        max_concurrent_decisions: 4,
        ..EngineConfig::default()
    })
    .unwrap();
    let pvc = engine
        .loader()
        .file(built_guest("rekon_guest_pvc_protection"))
        .unwrap();
    let misbehaving = engine
        .loader()
        .file(built_guest("rekon_guest_misbehaving"))
        .unwrap();
    let claim = engine
        .loader()
        .file(built_guest("rekon_guest_resource_claim"))
        .unwrap();

    let slot = GuestSlot::new(pvc.clone());
    assert_eq!(slot.world(), World::PvcProtection);
    let in_flight = slot.current();

    let previous = slot.publish(misbehaving.clone()).unwrap();
    assert_eq!(previous.id(), pvc.id());
    assert_eq!(slot.current().id(), misbehaving.id());
    // A decision that took the old guest keeps it.
    assert_eq!(in_flight.id(), pvc.id());

    let err = slot.publish(claim).unwrap_err();
    assert!(matches!(err, RegistryError::WrongWorld { .. }), "{err}");
    assert_eq!(slot.current().id(), misbehaving.id());
}
