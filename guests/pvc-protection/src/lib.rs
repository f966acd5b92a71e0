//! Reference guest for the PVC protection controller (upstream-behaviour §1).
//!
//! [`logic`] holds the decision as plain Rust over its 0.2.0 projection
//! ([`rekon_guest::projection::pvc`]); it runs
//! natively in tests and benches. Built for wasm32, the crate also exports it as
//! the `pvc-decider` interface of the `rekon:reconcile/pvc-protection` world.

pub mod logic;

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "rekon:reconcile/pvc-protection@0.2.0",
        with: {
            "rekon:reconcile/types@0.2.0": rekon_guest::bindings::rekon::reconcile0_2_0::types,
            "rekon:reconcile/log@0.2.0": rekon_guest::bindings::rekon::reconcile0_2_0::log,
        },
    });

    rekon_guest::impl_contract_conversions!(v0_2_0: pvc = exports::rekon::reconcile0_2_0::pvc_decider);

    use exports::rekon::reconcile0_2_0::pvc_decider::{Guest, PvcDecision, PvcInput};
    use rekon_guest::projection::pvc;

    struct PvcProtection;

    impl Guest for PvcProtection {
        fn decide(input: PvcInput) -> PvcDecision {
            let input = pvc::PvcInput::from(input);
            crate::logic::decide(&input).into()
        }
    }

    export!(PvcProtection);

    /// Each decision runs in a fresh instance: no memory is ever freed.
    #[global_allocator]
    static ALLOC: rekon_guest::alloc::BumpAlloc = rekon_guest::alloc::BumpAlloc::new();
}
