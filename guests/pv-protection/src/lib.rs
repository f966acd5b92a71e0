//! kube-controller-manager's pv-protection controller as a module of the
//! generic `controller` world (0.3.0): no host code names it.
//!
//! [`logic`] holds the description and the decision as plain Rust; it runs
//! natively in tests. Built for wasm32, the crate exports it as the
//! `controller` interface of `rekon:reconcile/controller@0.3.0`.

pub mod logic;

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "rekon:reconcile/controller@0.3.0",
    });

    rekon_guest::impl_controller_conversions!(exports::rekon::reconcile0_3_0::controller_decider);

    use exports::rekon::reconcile0_3_0::controller_decider::{Decision, Description, Guest, Input};

    struct PvProtection;

    impl Guest for PvProtection {
        fn describe() -> Description {
            crate::logic::describe().into()
        }

        fn decide(input: Input) -> Decision {
            crate::logic::decide(&input.into()).into()
        }
    }

    export!(PvProtection);

    /// Each decision runs in a fresh instance: no memory is ever freed.
    #[global_allocator]
    static ALLOC: rekon_guest::alloc::BumpAlloc = rekon_guest::alloc::BumpAlloc::new();
}
