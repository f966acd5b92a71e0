//! Reference guest for the generic ephemeral volume controller (upstream-behaviour §2).
//!
//! [`logic`] holds the decision as plain Rust over [`rekon_guest::ephemeral`]; it
//! runs natively in tests. Built for wasm32, the crate also exports it as the
//! `volume-decider` interface of the `rekon:reconcile/ephemeral-volume` world.

pub mod logic;

#[cfg(target_arch = "wasm32")]
mod component {
    // Self-contained world: nothing to share with the SDK's `types` bindings.
    // (`reconcile0_2_0`: wit/deps holds 0.1.0 too, so wit-bindgen adds the version.)
    wit_bindgen::generate!({
        path: "../../wit",
        world: "rekon:reconcile/ephemeral-volume@0.2.0",
    });

    rekon_guest::impl_ephemeral_conversions!(exports::rekon::reconcile0_2_0::volume_decider);

    use exports::rekon::reconcile0_2_0::volume_decider::{Guest, VolumeDecision, VolumeInput};
    use rekon_guest::ephemeral;

    struct EphemeralVolume;

    impl Guest for EphemeralVolume {
        fn decide(input: VolumeInput) -> VolumeDecision {
            let input = ephemeral::VolumeInput::from(input);
            crate::logic::decide(&input).into()
        }
    }

    export!(EphemeralVolume);

    /// Each decision runs in a fresh instance: no memory is ever freed.
    #[global_allocator]
    static ALLOC: rekon_guest::alloc::BumpAlloc = rekon_guest::alloc::BumpAlloc::new();
}
