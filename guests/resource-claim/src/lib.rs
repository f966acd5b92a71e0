//! Reference guest for the DRA ResourceClaim controller (upstream-behaviour §3).
//!
//! [`logic`] holds both decisions as plain Rust over [`rekon_guest::model`]; they
//! run natively in tests and benches. Built for wasm32, the crate also exports
//! them as the `claim-decider` interface of the `rekon:reconcile/resource-claim`
//! world.

pub mod logic;

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "rekon:reconcile/resource-claim@0.2.0",
        with: {
            "rekon:reconcile/types@0.2.0": rekon_guest::bindings::rekon::reconcile0_2_0::types,
            "rekon:reconcile/log@0.2.0": rekon_guest::bindings::rekon::reconcile0_2_0::log,
        },
    });

    rekon_guest::impl_contract_conversions!(v0_2_0: claim = exports::rekon::reconcile0_2_0::claim_decider);

    use exports::rekon::reconcile0_2_0::claim_decider::{
        ClaimDecision, ClaimInput, Guest, PodDecision, PodInput,
    };
    use rekon_guest::{model, projection};

    struct ResourceClaimDecider;

    impl Guest for ResourceClaimDecider {
        fn decide_pod(input: PodInput) -> PodDecision {
            let input = model::PodInput::from(input);
            crate::logic::decide_pod(&input).into()
        }

        fn decide_claim(input: ClaimInput) -> ClaimDecision {
            let input = projection::claim::ClaimInput::from(input);
            crate::logic::decide_claim(&input).into()
        }
    }

    export!(ResourceClaimDecider);

    /// Each decision runs in a fresh instance: no memory is ever freed.
    #[global_allocator]
    static ALLOC: rekon_guest::alloc::BumpAlloc = rekon_guest::alloc::BumpAlloc::new();
}
