//! rekon guest SDK.
//!
//! - [`model`]: the projected objects as plain Rust, the host's one model (the
//!   `rekon:reconcile@0.1.0` records field for field).
//! - [`projection`]: what each `rekon:reconcile@0.2.0` decision reads, projected
//!   from the model; decision logic runs on it natively (unit tests, benches) and
//!   inside a component alike.
//! - [`bindings`]: the wit-bindgen bindings of the shared `types` and `log`
//!   interfaces, which a guest reuses through wit-bindgen's `with` option.
//! - [`impl_contract_conversions!`]: moves between generated types and the model.
//! - [`generated_claim`]: the claim generated for a pod claim from its template
//!   (the reference guest creates it, the host checks guests against it).
//! - [`log`]: log through the host (a no-op when running natively).
//! - [`controller`]: the `controller` world (0.3.0): a controller as a module.
//! - [`alloc::BumpAlloc`]: a global allocator for guests (fresh instance per decision).

pub mod alloc;
#[cfg(feature = "cases")]
pub mod cases;
pub mod controller;
pub mod convert;
pub mod ephemeral;
pub mod generated_claim;
pub mod model;
pub mod projection;

/// Shared WIT types and the host log import, generated once for every guest.
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "rekon:reconcile/guest-imports@0.2.0",
        additional_derives: [PartialEq, Eq],
        generate_all,
    });
}

crate::impl_contract_conversions!(v0_2_0: types = bindings::rekon::reconcile0_2_0::types);

/// Log a message through the host's logger. Natively (tests), it does nothing.
pub fn log(level: bindings::rekon::reconcile0_2_0::log::Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    bindings::rekon::reconcile0_2_0::log::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (level, message);
}

/// The version of the WIT package this SDK targets.
pub const CONTRACT_VERSION: &str = "0.2.0";
