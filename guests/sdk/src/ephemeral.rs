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

#[cfg(test)]
mod tests {
    //! Round trips model → generated → model, with the world's bindings generated
    //! natively the way the guest crate does.

    use super::*;

    mod world {
        wit_bindgen::generate!({
            path: "../../wit",
            world: "rekon:reconcile/ephemeral-volume@0.2.0",
        });
    }

    crate::impl_ephemeral_conversions!(world::exports::rekon::reconcile0_2_0::volume_decider);

    use world::exports::rekon::reconcile0_2_0::volume_decider as generated;

    fn round_trip<G, M: Into<G>>(value: M) -> M
    where
        G: Into<M>,
    {
        let generated: G = value.into();
        generated.into()
    }

    #[test]
    fn input_and_decision_round_trip_with_every_field_set() {
        let volume = |existing| EphemeralVolume {
            name: "data".into(),
            template: ClaimTemplate {
                labels: vec![("app".into(), "web".into())],
                annotations: vec![("note".into(), "x".into())],
                spec_json: r#"{"storageClassName":"fast"}"#.into(),
            },
            existing,
        };
        let input = VolumeInput {
            pod: EphemeralPod {
                namespace: "ns".into(),
                name: "web".into(),
                uid: "pu".into(),
                deleting: true,
            },
            volumes: vec![
                volume(None),
                volume(Some(ExistingClaim {
                    name: "web-data".into(),
                    uid: "cu".into(),
                    controller: None,
                })),
                volume(Some(ExistingClaim {
                    name: "web-data".into(),
                    uid: "cu".into(),
                    controller: Some(ControllerRef {
                        kind: "Pod".into(),
                        name: "web".into(),
                        uid: "pu".into(),
                    }),
                })),
            ],
        };
        assert_eq!(
            round_trip::<generated::VolumeInput, _>(input.clone()),
            input
        );
        let decision = VolumeDecision {
            actions: vec![
                VolumeAction::CreatePvc("a".into()),
                VolumeAction::Conflict(ClaimConflict {
                    volume: "b".into(),
                    claim_name: "web-b".into(),
                    message: "taken".into(),
                }),
            ],
        };
        assert_eq!(
            round_trip::<generated::VolumeDecision, _>(decision.clone()),
            decision
        );
    }

    #[test]
    fn controlled_by_compares_the_controller_uid_only() {
        let pod = EphemeralPod {
            uid: "pu".into(),
            name: "web".into(),
            ..Default::default()
        };
        let claim = |uid: Option<&str>| ExistingClaim {
            controller: uid.map(|uid| ControllerRef {
                uid: uid.into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(claim(Some("pu")).is_controlled_by(&pod));
        assert!(!claim(Some("other")).is_controlled_by(&pod));
        assert!(!claim(None).is_controlled_by(&pod));
        assert_eq!(pod.claim_name("data"), "web-data");
    }
}
