//! The plain-Rust model of the `ephemeral-volume` world (`volume-decider`),
//! field for field as in `wit/ephemeral-volume.wit`, with the same serde form as
//! [`crate::model`] (WIT names, kebab-case; empty lists and absent options may be
//! omitted).

use serde::{Deserialize, Serialize};

/// `spec.volumes[].ephemeral.volumeClaimTemplate` of one volume.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ClaimTemplate {
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
    /// A PersistentVolumeClaimSpec as JSON, copied verbatim by the host.
    pub spec_json: String,
}

/// The controlling owner reference of an existing PVC.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ControllerRef {
    pub kind: String,
    pub name: String,
    pub uid: String,
}

/// The cached PVC named `<pod>-<volume>`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ExistingClaim {
    pub name: String,
    pub uid: String,
    pub controller: Option<ControllerRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct EphemeralVolume {
    pub name: String,
    pub template: ClaimTemplate,
    pub existing: Option<ExistingClaim>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct EphemeralPod {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub deleting: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct VolumeInput {
    pub pod: EphemeralPod,
    pub volumes: Vec<EphemeralVolume>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ClaimConflict {
    pub volume: String,
    pub claim_name: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VolumeAction {
    /// Create the PVC of this volume (by volume name).
    CreatePvc(String),
    Conflict(ClaimConflict),
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct VolumeDecision {
    pub actions: Vec<VolumeAction>,
}

impl EphemeralPod {
    /// EphemeralClaimName (upstream-behaviour §1.1): `<pod>-<volume>`, no suffix.
    pub fn claim_name(&self, volume: &str) -> String {
        format!("{}-{volume}", self.name)
    }
}

impl ExistingClaim {
    /// ControlledBy (upstream-behaviour §1.1): the controlling owner reference
    /// carries the pod's UID. The host only looks the PVC up in the pod's
    /// namespace, so the namespace half of the predicate holds by construction.
    pub fn is_controlled_by(&self, pod: &EphemeralPod) -> bool {
        self.controller.as_ref().is_some_and(|c| c.uid == pod.uid)
    }
}

/// Implements `From` in both directions between this module's types and the
/// bindings generated for the `volume-decider` interface (guest: wit-bindgen,
/// host: wasmtime's `bindgen!`), given the path of the generated module:
///
/// ```text
/// rekon_guest::impl_ephemeral_conversions!(exports::rekon::reconcile::volume_decider);
/// ```
#[macro_export]
macro_rules! impl_ephemeral_conversions {
    ($($v:ident)::+ $(,)?) => {
        $crate::__rekon_record!($($v)::+::ClaimTemplate, $crate::ephemeral::ClaimTemplate {
            labels: one, annotations: one, spec_json: one,
        });
        $crate::__rekon_record!($($v)::+::ControllerRef, $crate::ephemeral::ControllerRef {
            kind: one, name: one, uid: one,
        });
        $crate::__rekon_record!($($v)::+::ExistingClaim, $crate::ephemeral::ExistingClaim {
            name: one, uid: one, controller: opt,
        });
        $crate::__rekon_record!($($v)::+::EphemeralVolume, $crate::ephemeral::EphemeralVolume {
            name: one, template: one, existing: opt,
        });
        $crate::__rekon_record!($($v)::+::EphemeralPod, $crate::ephemeral::EphemeralPod {
            namespace: one, name: one, uid: one, deleting: one,
        });
        $crate::__rekon_record!($($v)::+::VolumeInput, $crate::ephemeral::VolumeInput {
            pod: one, volumes: vec,
        });
        $crate::__rekon_record!($($v)::+::ClaimConflict, $crate::ephemeral::ClaimConflict {
            volume: one, claim_name: one, message: one,
        });
        $crate::__rekon_variant!($($v)::+::VolumeAction, $crate::ephemeral::VolumeAction {
            CreatePvc(one), Conflict(one);
        });
        $crate::__rekon_record!($($v)::+::VolumeDecision, $crate::ephemeral::VolumeDecision {
            actions: vec,
        });
    };
}
