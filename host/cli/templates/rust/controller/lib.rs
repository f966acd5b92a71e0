//! `{{controller}}`: a controller module of world
//! `rekon:reconcile/controller@0.3.0`, made by `rekon new`.
//!
//! [`logic`] holds what the controller is (`describe`) and what it does
//! (`decide`) as plain functions on the world's types, so
//! `cargo test --target host-tuple` runs them natively. Built for
//! wasm32-wasip2, this file exports them as the component's
//! `controller-decider` interface; the host calls `describe` once at load and
//! `decide` once per App key, in a fresh instance each time.

wit_bindgen::generate!({
    path: "wit",
    world: "rekon:reconcile/controller@0.3.0",
    additional_derives: [PartialEq, Eq],
});

pub mod logic;

/// The world's types: `Description`, `Input`, `Decision`, `Action`, ...
pub use exports::rekon::reconcile::controller_decider as world;

/// The component's exports: only built for wasm32 (natively, the export names,
/// `rekon:reconcile/controller-decider@0.3.0#decide`, are no linker symbols).
#[cfg(target_arch = "wasm32")]
mod component {
    use crate::{logic, world};

    struct Module;

    impl world::Guest for Module {
        fn describe() -> world::Description {
            logic::describe()
        }

        fn decide(input: world::Input) -> world::Decision {
            logic::decide(&input)
        }
    }

    crate::export!(Module with_types_in crate);
}
