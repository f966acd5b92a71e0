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
        path: "../../wit/deps/rekon-reconcile@0.1.0",
        world: "rekon:reconcile/resource-claim@0.1.0",
        with: {
            "rekon:reconcile/types@0.1.0": rekon_guest::bindings::rekon::reconcile::types,
            "rekon:reconcile/log@0.1.0": rekon_guest::bindings::rekon::reconcile::log,
        },
    });

    rekon_guest::impl_contract_conversions!(claim = exports::rekon::reconcile::claim_decider);

    use exports::rekon::reconcile::claim_decider::{
        ClaimDecision, ClaimInput, Guest, PodDecision, PodInput,
    };
    use rekon_guest::model;

    struct ResourceClaimDecider;

    impl Guest for ResourceClaimDecider {
        fn decide_pod(input: PodInput) -> PodDecision {
            let input = model::PodInput::from(input);
            crate::logic::decide_pod(&input).into()
        }

        fn decide_claim(input: ClaimInput) -> ClaimDecision {
            let input = model::ClaimInput::from(input);
            crate::logic::decide_claim(&input).into()
        }
    }

    export!(ResourceClaimDecider);
}
