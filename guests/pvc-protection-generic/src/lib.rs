//! The pvc-protection decision re-expressed on the generic `controller` world
//! (0.3.0): PersistentVolumeClaims as the primary, pods indexed by the claim
//! names of their volumes, and the live pod list as a fresh read. It proves the
//! generic world carries a built-in controller; the dedicated
//! `pvc-protection` world stays.

pub mod logic;

rekon_guest::export_controller!(crate::logic);
