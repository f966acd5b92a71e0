//! Conversions between the plain model and generated bindings.
//!
//! wit-bindgen (guest side) and wasmtime's `bindgen!` (host side) generate the same
//! Rust names for the same WIT, so one macro serves both: a guest converts its
//! inputs into the model and its decision back, the host does the reverse. Every
//! conversion moves; nothing is cloned.

/// Converts one field according to its shape.
#[doc(hidden)]
#[macro_export]
macro_rules! __rekon_conv {
    (one, $e:expr) => {
        ::core::convert::Into::into($e)
    };
    (vec, $e:expr) => {
        $e.into_iter().map(::core::convert::Into::into).collect()
    };
    (opt, $e:expr) => {
        $e.map(::core::convert::Into::into)
    };
    (optvec, $e:expr) => {
        $e.map(|v| v.into_iter().map(::core::convert::Into::into).collect())
    };
}

/// Both directions of `From` between a generated record and a model record.
#[doc(hidden)]
#[macro_export]
macro_rules! __rekon_record {
    ($gen:ty, $model:ty { $($field:ident: $kind:ident),* $(,)? }) => {
        impl ::core::convert::From<$gen> for $model {
            fn from(v: $gen) -> Self {
                Self { $($field: $crate::__rekon_conv!($kind, v.$field)),* }
            }
        }
        impl ::core::convert::From<$model> for $gen {
            fn from(v: $model) -> Self {
                Self { $($field: $crate::__rekon_conv!($kind, v.$field)),* }
            }
        }
    };
}

/// Both directions of `From` between a generated variant/enum and a model enum.
/// Variants with a payload come first, unit variants after the `;`.
#[doc(hidden)]
#[macro_export]
macro_rules! __rekon_variant {
    ($gen:ty, $model:ty { $($variant:ident($kind:ident)),* ; $($unit:ident),* $(,)? }) => {
        impl ::core::convert::From<$gen> for $model {
            fn from(v: $gen) -> Self {
                type G = $gen;
                match v {
                    $(G::$variant(x) => Self::$variant($crate::__rekon_conv!($kind, x)),)*
                    $(G::$unit => Self::$unit,)*
                }
            }
        }
        impl ::core::convert::From<$model> for $gen {
            fn from(v: $model) -> Self {
                type M = $model;
                match v {
                    $(M::$variant(x) => Self::$variant($crate::__rekon_conv!($kind, x)),)*
                    $(M::$unit => Self::$unit,)*
                }
            }
        }
    };
}

/// Implements `From` in both directions between the plain types and the bindings
/// generated for one contract version, given the paths of the generated `types`,
/// `pvc-decider` and `claim-decider` modules: [`crate::model`] for 0.1.0, and for
/// 0.2.0 (prefix `v0_2_0:`) [`crate::projection`] where the world changed.
///
/// ```text
/// // host side, 0.1.0: every interface
/// rekon_guest::impl_contract_conversions!(
///     types = bindings::rekon::reconcile::types,
///     pvc = bindings::exports::rekon::reconcile::pvc_decider,
///     claim = bindings::exports::rekon::reconcile::claim_decider,
/// );
/// // guest side, 0.2.0: `types` is mapped onto `rekon_guest::bindings` through
/// // wit-bindgen's `with`, whose conversions this crate already implements
/// rekon_guest::impl_contract_conversions!(v0_2_0: pvc = exports::rekon::reconcile0_2_0::pvc_decider);
/// ```
///
/// (wit-bindgen names the package module `reconcile0_2_0` because `wit/deps`
/// holds a second version of the package.)
#[macro_export]
macro_rules! impl_contract_conversions {
    (types = $($t:ident)::+, pvc = $($p:ident)::+, claim = $($c:ident)::+ $(,)?) => {
        $crate::impl_contract_conversions!(@types $($t)::+);
        $crate::impl_contract_conversions!(@pvc $($p)::+);
        $crate::impl_contract_conversions!(@claim $($c)::+);
    };
    (types = $($t:ident)::+ $(,)?) => {
        $crate::impl_contract_conversions!(@types $($t)::+);
    };
    (types = $($t:ident)::+, pvc = $($p:ident)::+ $(,)?) => {
        $crate::impl_contract_conversions!(@types $($t)::+);
        $crate::impl_contract_conversions!(@pvc $($p)::+);
    };
    (types = $($t:ident)::+, claim = $($c:ident)::+ $(,)?) => {
        $crate::impl_contract_conversions!(@types $($t)::+);
        $crate::impl_contract_conversions!(@claim $($c)::+);
    };
    // A guest crate: the shared types are converted inside rekon-guest already,
    // so it only names its own world's exported interface.
    (pvc = $($p:ident)::+ $(,)?) => {
        $crate::impl_contract_conversions!(@pvc $($p)::+);
    };
    (claim = $($c:ident)::+ $(,)?) => {
        $crate::impl_contract_conversions!(@claim $($c)::+);
    };
    // `rekon:reconcile@0.2.0`: `v0_2_0: types = …, pvc = …, claim = …` (any subset,
    // in this order). The pvc world and the claim key move to [`crate::projection`].
    (v0_2_0: $($part:ident = $($path:ident)::+),+ $(,)?) => {
        $( $crate::impl_contract_conversions!(@v0_2_0 $part $($path)::+); )+
    };
    (@v0_2_0 types $($t:ident)::+) => {
        $crate::impl_contract_conversions!(@types_shared $($t)::+);
    };
    (@v0_2_0 pvc $($p:ident)::+) => {
        $crate::__rekon_record!($($p)::+::Pvc, $crate::projection::pvc::Pvc {
            name: one, uid: one, resource_version: one, deleting: one, finalizers: one,
            controller_uid: one,
        });
        $crate::__rekon_variant!($($p)::+::Volume, $crate::projection::pvc::Volume { Claim(one), Ephemeral(one); });
        $crate::__rekon_record!($($p)::+::Pod, $crate::projection::pvc::Pod {
            name: one, uid: one, scheduled: one, shut_down: one, volumes: vec,
        });
        impl ::core::convert::From<$($p)::+::PvcInput> for $crate::projection::pvc::PvcInput {
            fn from(v: $($p)::+::PvcInput) -> Self {
                Self {
                    pvc: v.pvc.into(),
                    cached_pods: $crate::__rekon_conv!(vec, v.cached_pods),
                    live_pods: v.live_listed.then(|| $crate::__rekon_conv!(vec, v.live_pods)),
                }
            }
        }
        impl ::core::convert::From<$crate::projection::pvc::PvcInput> for $($p)::+::PvcInput {
            fn from(v: $crate::projection::pvc::PvcInput) -> Self {
                Self {
                    pvc: v.pvc.into(),
                    cached_pods: $crate::__rekon_conv!(vec, v.cached_pods),
                    live_listed: v.live_pods.is_some(),
                    live_pods: $crate::__rekon_conv!(vec, v.live_pods.unwrap_or_default()),
                }
            }
        }
        $crate::__rekon_variant!($($p)::+::PvcAction, $crate::model::PvcAction { AddFinalizer(one), RemoveFinalizer(one);  });
        $crate::__rekon_variant!($($p)::+::PvcDecision, $crate::model::PvcDecision { Actions(vec); NeedLivePods });
    };
    (@v0_2_0 claim $($c:ident)::+) => {
        $crate::impl_contract_conversions!(@claim_pod $($c)::+);
        $crate::__rekon_record!($($c)::+::PodState, $crate::projection::claim::PodState {
            uid: one, phase: one, deleting: one, scheduled: one,
        });
        $crate::__rekon_variant!($($c)::+::PodLookup, $crate::projection::claim::PodLookup { Cached(one), Live(one); NotFound, Unknown });
        $crate::__rekon_record!($($c)::+::Reservation, $crate::projection::claim::Reservation {
            consumer: one, deleted: one, pod: one,
        });
        $crate::__rekon_record!($($c)::+::ClaimInput, $crate::projection::claim::ClaimInput {
            claim: one, reservations: vec, owner_pod: opt,
        });
    };
    (@types $($t:ident)::+) => {
        $crate::impl_contract_conversions!(@types_shared $($t)::+);
        $crate::__rekon_record!($($t)::+::Pvc, $crate::model::Pvc { meta: one });
    };
    // The types both versions share (0.2.0 dropped `pvc` for pvc-decider's own).
    (@types_shared $($t:ident)::+) => {
        $crate::__rekon_record!($($t)::+::OwnerReference, $crate::model::OwnerReference {
            api_version: one, kind: one, name: one, uid: one, controller: one, block_owner_deletion: one,
        });
        $crate::__rekon_record!($($t)::+::ObjectMeta, $crate::model::ObjectMeta {
            namespace: one, name: one, uid: one, resource_version: one, deletion_timestamp: one,
            deletion_grace_period_seconds: one, finalizers: one, owner_references: vec,
            labels: one, annotations: one,
        });
        $crate::__rekon_variant!($($t)::+::PodPhase, $crate::model::PodPhase { ; Pending, Running, Succeeded, Failed, Unknown });
        $crate::__rekon_variant!($($t)::+::VolumeSource, $crate::model::VolumeSource { PersistentVolumeClaim(one); Ephemeral });
        $crate::__rekon_record!($($t)::+::PodVolume, $crate::model::PodVolume { name: one, source: one });
        $crate::__rekon_record!($($t)::+::PodResourceClaim, $crate::model::PodResourceClaim {
            name: one, resource_claim_name: one, resource_claim_template_name: one,
        });
        $crate::__rekon_record!($($t)::+::PodResourceClaimStatus, $crate::model::PodResourceClaimStatus {
            name: one, resource_claim_name: one,
        });
        $crate::__rekon_record!($($t)::+::Pod, $crate::model::Pod {
            meta: one, node_name: one, phase: one, volumes: vec, resource_claims: vec,
            resource_claim_statuses: vec,
        });
        $crate::__rekon_record!($($t)::+::ConsumerReference, $crate::model::ConsumerReference {
            api_group: one, resource: one, name: one, uid: one,
        });
        $crate::__rekon_record!($($t)::+::ResourceClaim, $crate::model::ResourceClaim {
            meta: one, allocated: one, reserved_for: vec,
        });
        $crate::__rekon_record!($($t)::+::ResourceClaimTemplate, $crate::model::ResourceClaimTemplate {
            meta: one, claim_spec_json: one,
        });
        $crate::__rekon_record!($($t)::+::Target, $crate::model::Target {
            name: one, uid: one, resource_version: one,
        });
    };
    (@pvc $($p:ident)::+) => {
        $crate::__rekon_record!($($p)::+::PvcInput, $crate::model::PvcInput {
            pvc: one, cached_pods: vec, live_pods: optvec,
        });
        $crate::__rekon_variant!($($p)::+::PvcAction, $crate::model::PvcAction { AddFinalizer(one), RemoveFinalizer(one);  });
        $crate::__rekon_variant!($($p)::+::PvcDecision, $crate::model::PvcDecision { Actions(vec); NeedLivePods });
    };
    (@claim $($c:ident)::+) => {
        $crate::impl_contract_conversions!(@claim_pod $($c)::+);
        $crate::__rekon_variant!($($c)::+::PodLookup, $crate::model::PodLookup { Cached(one), Live(one); NotFound, Unknown });
        $crate::__rekon_record!($($c)::+::Reservation, $crate::model::Reservation {
            consumer: one, deleted: one, pod: one,
        });
        $crate::__rekon_record!($($c)::+::ClaimInput, $crate::model::ClaimInput {
            claim: one, reservations: vec, owner_pod: opt,
        });
    };
    // What both versions share: the pod key and the claim key's decision.
    (@claim_pod $($c:ident)::+) => {
        $crate::__rekon_record!($($c)::+::PodInput, $crate::model::PodInput {
            pod: one, claims: vec, owned_claims: vec, templates: vec,
        });
        $crate::__rekon_record!($($c)::+::NewClaim, $crate::model::NewClaim {
            pod_claim_name: one, generate_name: one, template_name: one, labels: one,
            annotations: one, owner_references: vec, claim_spec_json: one,
        });
        $crate::__rekon_variant!($($c)::+::StatusClaim, $crate::model::StatusClaim { Existing(one); Created, None });
        $crate::__rekon_record!($($c)::+::DesiredClaimStatus, $crate::model::DesiredClaimStatus {
            name: one, claim: one,
        });
        $crate::__rekon_record!($($c)::+::ClaimStatuses, $crate::model::ClaimStatuses {
            pod: one, statuses: vec,
        });
        $crate::__rekon_record!($($c)::+::ReservationAdd, $crate::model::ReservationAdd {
            claim: one, consumer: one,
        });
        $crate::__rekon_variant!($($c)::+::PodAction, $crate::model::PodAction { CreateClaim(one), SetClaimStatuses(one), Reserve(one);  });
        $crate::__rekon_record!($($c)::+::PodDecision, $crate::model::PodDecision {
            actions: vec, error: one,
        });
        $crate::__rekon_record!($($c)::+::StatusUpdate, $crate::model::StatusUpdate {
            claim: one, reserved_for: vec, clear_allocation: one,
        });
        $crate::__rekon_record!($($c)::+::FinalizerRemoval, $crate::model::FinalizerRemoval {
            claim: one, finalizer: one,
        });
        $crate::__rekon_variant!($($c)::+::ClaimAction, $crate::model::ClaimAction { UpdateStatus(one), RemoveFinalizer(one), Delete(one);  });
        $crate::__rekon_variant!($($c)::+::ClaimDecision, $crate::model::ClaimDecision { Actions(vec), NeedLivePods(one);  });
    };
}

#[cfg(test)]
mod tests {
    //! Round trips projection → generated → projection through the guest-side
    //! 0.2.0 arms, with the worlds' bindings generated natively the way a guest
    //! crate does. (The 0.1.0 arms are exercised by the host's 0.1.0 bindings.)

    use crate::model::*;
    use crate::projection::{claim as pc, pvc as pp};

    mod pvc_world {
        wit_bindgen::generate!({
            path: "../../wit",
            world: "rekon:reconcile/pvc-protection@0.2.0",
            with: {
                "rekon:reconcile/types@0.2.0": crate::bindings::rekon::reconcile0_2_0::types,
                "rekon:reconcile/log@0.2.0": crate::bindings::rekon::reconcile0_2_0::log,
            },
        });
    }

    mod claim_world {
        wit_bindgen::generate!({
            path: "../../wit",
            world: "rekon:reconcile/resource-claim@0.2.0",
            with: {
                "rekon:reconcile/types@0.2.0": crate::bindings::rekon::reconcile0_2_0::types,
                "rekon:reconcile/log@0.2.0": crate::bindings::rekon::reconcile0_2_0::log,
            },
        });
    }

    crate::impl_contract_conversions!(
        v0_2_0: pvc = pvc_world::exports::rekon::reconcile0_2_0::pvc_decider,
        claim = claim_world::exports::rekon::reconcile0_2_0::claim_decider,
    );

    use claim_world::exports::rekon::reconcile0_2_0::claim_decider as claim_gen;
    use pvc_world::exports::rekon::reconcile0_2_0::pvc_decider as pvc_gen;

    fn round_trip<G, M>(value: M) -> M
    where
        M: Clone + Into<G>,
        G: Into<M>,
    {
        let generated: G = value.into();
        generated.into()
    }

    /// A pod with every field set to something other than its default.
    fn full_pod() -> Pod {
        Pod {
            meta: ObjectMeta {
                namespace: "ns".into(),
                name: "p".into(),
                uid: "pu".into(),
                resource_version: "7".into(),
                deletion_timestamp: Some("2026-01-01T00:00:00Z".into()),
                deletion_grace_period_seconds: Some(30),
                finalizers: vec!["f".into()],
                owner_references: vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "ReplicaSet".into(),
                    name: "rs".into(),
                    uid: "ru".into(),
                    controller: true,
                    block_owner_deletion: true,
                }],
                labels: vec![("app".into(), "web".into())],
                annotations: vec![("note".into(), "x".into())],
            },
            node_name: "node-1".into(),
            phase: PodPhase::Failed,
            volumes: vec![
                PodVolume {
                    name: "data".into(),
                    source: VolumeSource::PersistentVolumeClaim("claim".into()),
                },
                PodVolume {
                    name: "scratch".into(),
                    source: VolumeSource::Ephemeral,
                },
            ],
            resource_claims: vec![PodResourceClaim {
                name: "gpu".into(),
                resource_claim_name: None,
                resource_claim_template_name: Some("tpl".into()),
            }],
            resource_claim_statuses: vec![PodResourceClaimStatus {
                name: "gpu".into(),
                resource_claim_name: Some("p-gpu-x".into()),
            }],
        }
    }

    fn target() -> Target {
        Target {
            name: "c".into(),
            uid: "cu".into(),
            resource_version: "9".into(),
        }
    }

    #[test]
    fn pvc_input_and_decisions_round_trip() {
        let mut pvc = Pvc {
            meta: full_pod().meta,
        };
        pvc.meta.owner_references[0].uid = "pu".into();
        let input = pp::PvcInput::from(PvcInput {
            pvc,
            cached_pods: vec![full_pod()],
            live_pods: Some(vec![full_pod(), Pod::default()]),
        });
        assert_eq!(input.pvc.controller_uid.as_deref(), Some("pu"));
        assert!(input.pvc.deleting);
        assert_eq!(
            input.live_pods.as_ref().map(Vec::len),
            Some(1),
            "other namespace dropped"
        );
        let pod = &input.cached_pods[0];
        assert!(pod.scheduled && !pod.shut_down);
        assert_eq!(
            pod.volumes,
            [
                pp::Volume::Claim("claim".into()),
                pp::Volume::Ephemeral("scratch".into())
            ]
        );
        assert_eq!(round_trip::<pvc_gen::PvcInput, _>(input.clone()), input);
        let not_listed = pp::PvcInput {
            live_pods: None,
            ..input
        };
        assert_eq!(
            round_trip::<pvc_gen::PvcInput, _>(not_listed.clone()),
            not_listed
        );
        for decision in [
            PvcDecision::NeedLivePods,
            PvcDecision::Actions(vec![
                PvcAction::AddFinalizer(target()),
                PvcAction::RemoveFinalizer(target()),
            ]),
        ] {
            assert_eq!(
                round_trip::<pvc_gen::PvcDecision, _>(decision.clone()),
                decision
            );
        }
    }

    #[test]
    fn pod_input_and_decision_round_trip() {
        let claim = ResourceClaim {
            meta: full_pod().meta,
            allocated: true,
            reserved_for: vec![full_pod().consumer()],
        };
        let input = PodInput {
            pod: full_pod(),
            claims: vec![claim.clone()],
            owned_claims: vec![claim],
            templates: vec![ResourceClaimTemplate {
                meta: full_pod().meta,
                claim_spec_json: "{}".into(),
            }],
        };
        assert_eq!(round_trip::<claim_gen::PodInput, _>(input.clone()), input);
        let decision = PodDecision {
            actions: vec![
                PodAction::CreateClaim(NewClaim {
                    pod_claim_name: "gpu".into(),
                    generate_name: "p-gpu-".into(),
                    template_name: "tpl".into(),
                    labels: vec![("a".into(), "b".into())],
                    annotations: vec![("c".into(), "d".into())],
                    owner_references: full_pod().meta.owner_references,
                    claim_spec_json: "{}".into(),
                }),
                PodAction::SetClaimStatuses(ClaimStatuses {
                    pod: target(),
                    statuses: vec![
                        DesiredClaimStatus {
                            name: "a".into(),
                            claim: StatusClaim::Existing("x".into()),
                        },
                        DesiredClaimStatus {
                            name: "b".into(),
                            claim: StatusClaim::Created,
                        },
                        DesiredClaimStatus {
                            name: "c".into(),
                            claim: StatusClaim::None,
                        },
                    ],
                }),
                PodAction::Reserve(ReservationAdd {
                    claim: target(),
                    consumer: full_pod().consumer(),
                }),
            ],
            error: Some("boom".into()),
        };
        assert_eq!(
            round_trip::<claim_gen::PodDecision, _>(decision.clone()),
            decision
        );
    }

    #[test]
    fn claim_input_and_decisions_round_trip() {
        let reservation = |pod| Reservation {
            consumer: full_pod().consumer(),
            deleted: true,
            pod,
        };
        let input = pc::ClaimInput::from(ClaimInput {
            claim: ResourceClaim {
                meta: full_pod().meta,
                allocated: true,
                reserved_for: vec![full_pod().consumer()],
            },
            reservations: vec![
                reservation(PodLookup::Cached(full_pod())),
                reservation(PodLookup::Live(full_pod())),
                reservation(PodLookup::NotFound),
                reservation(PodLookup::Unknown),
            ],
            owner_pod: Some(full_pod()),
        });
        let state = pc::PodState {
            uid: "pu".into(),
            phase: PodPhase::Failed,
            deleting: true,
            scheduled: true,
        };
        assert_eq!(input.owner_pod.as_ref(), Some(&state));
        assert_eq!(input.reservations[0].pod, pc::PodLookup::Cached(state));
        assert_eq!(round_trip::<claim_gen::ClaimInput, _>(input.clone()), input);
        for decision in [
            ClaimDecision::NeedLivePods(vec!["a".into(), "b".into()]),
            ClaimDecision::Actions(vec![
                ClaimAction::UpdateStatus(StatusUpdate {
                    claim: target(),
                    reserved_for: vec![full_pod().consumer()],
                    clear_allocation: true,
                }),
                ClaimAction::RemoveFinalizer(FinalizerRemoval {
                    claim: target(),
                    finalizer: "f".into(),
                }),
                ClaimAction::Delete(target()),
            ]),
        ] {
            assert_eq!(
                round_trip::<claim_gen::ClaimDecision, _>(decision.clone()),
                decision
            );
        }
    }
}
