//! The contract between the host and its guests.
//!
//! - [`bindings`]: the wasmtime `bindgen!` of every supported `rekon:reconcile`
//!   version, and the moves between the generated types and [`model`].
//! - [`binding`]: each (world, version) bound once, behind [`WorldBinding`].
//! - `project`: k8s-openapi objects -> the projected model records guests decide on.
//!
//! Hosts decide on [`model`] values (re-exported from the guest SDK so a reference
//! guest's native logic and the host share one definition).

pub mod binding;
pub mod bindings;
pub mod controller;
pub mod ephemeral_volume;
pub mod project;
pub mod world;

pub use binding::{BindWorld, CallError, WorldBinding, WorldVisitor, visit_worlds};
pub use bindings::{ContractVersion, PACKAGE, SUPPORTED_VERSIONS};
pub use controller::{ControllerDecision, ControllerInput, ControllerWorld};
pub use ephemeral_volume::EphemeralVolumeWorld;
pub use rekon_guest::model;
pub use world::{
    PvcProtectionWorld, ResourceClaimDecision, ResourceClaimInput, ResourceClaimWorld, WitWorld,
};

/// The newest supported version: what new code binds by default.
pub use bindings::v0_2_0 as current;
