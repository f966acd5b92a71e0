//! Reference guest for the PVC protection controller (upstream-behaviour §1).
//!
//! [`logic`] holds the decision as plain Rust over [`rekon_guest::model`]; it runs
//! natively in tests and benches. Built for wasm32, the crate also exports it as
//! the `pvc-decider` interface of the `rekon:reconcile/pvc-protection` world.

pub mod logic;

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({
        path: "../../wit/deps/rekon-reconcile@0.1.0",
        world: "rekon:reconcile/pvc-protection@0.1.0",
        with: {
            "rekon:reconcile/types@0.1.0": rekon_guest::bindings::rekon::reconcile::types,
            "rekon:reconcile/log@0.1.0": rekon_guest::bindings::rekon::reconcile::log,
        },
    });

    rekon_guest::impl_contract_conversions!(pvc = exports::rekon::reconcile::pvc_decider);

    use exports::rekon::reconcile::pvc_decider::{Guest, PvcDecision, PvcInput};
    use rekon_guest::model;

    struct PvcProtection;

    impl Guest for PvcProtection {
        fn decide(input: PvcInput) -> PvcDecision {
            let input = model::PvcInput::from(input);
            crate::logic::decide(&input).into()
        }
    }

    export!(PvcProtection);
}
