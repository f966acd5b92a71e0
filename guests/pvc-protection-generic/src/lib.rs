//! The pvc-protection decision re-expressed on the generic `controller` world
//! (0.3.0): PersistentVolumeClaims as the primary, pods indexed by the claim
//! names of their volumes, and the live pod list as a fresh read. It proves the
//! generic world carries a built-in controller; the dedicated
//! `pvc-protection` world stays.

pub mod logic;

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "rekon:reconcile/controller@0.3.0",
    });

    rekon_guest::impl_controller_conversions!(exports::rekon::reconcile0_3_0::controller_decider);

    use exports::rekon::reconcile0_3_0::controller_decider::{Decision, Description, Guest, Input};

    struct PvcProtection;

    impl Guest for PvcProtection {
        fn describe() -> Description {
            crate::logic::describe().into()
        }

        fn decide(input: Input) -> Decision {
            crate::logic::decide(&input.into()).into()
        }
    }

    export!(PvcProtection);

    /// Each decision runs in a fresh instance: no memory is ever freed.
    #[global_allocator]
    static ALLOC: rekon_guest::alloc::BumpAlloc = rekon_guest::alloc::BumpAlloc::new();
}
