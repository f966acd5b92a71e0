//! What the claim-key decision reads (`claim-decider@0.2.0`). The pod key reads
//! nearly the whole projected pod, claims and templates, so `decide-pod` keeps the
//! model types.

use serde::{Deserialize, Serialize};

use crate::model::{self, ConsumerReference, PodPhase, ResourceClaim};

/// What the claim decisions read of a pod.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct PodState {
    pub uid: String,
    pub phase: PodPhase,
    pub deleting: bool,
    pub scheduled: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PodLookup {
    Cached(PodState),
    Live(PodState),
    NotFound,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Reservation {
    pub consumer: ConsumerReference,
    #[serde(default)]
    pub deleted: bool,
    pub pod: PodLookup,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct ClaimInput {
    pub claim: ResourceClaim,
    pub reservations: Vec<Reservation>,
    pub owner_pod: Option<PodState>,
}

impl PodState {
    /// Terminal phase, or deleted while unscheduled (upstream `isPodDone`).
    pub fn is_done(&self) -> bool {
        matches!(self.phase, PodPhase::Succeeded | PodPhase::Failed)
            || (self.deleting && !self.scheduled)
    }
}

impl From<model::Pod> for PodState {
    fn from(pod: model::Pod) -> Self {
        Self {
            phase: pod.phase,
            deleting: pod.meta.is_deleting(),
            scheduled: pod.is_scheduled(),
            uid: pod.meta.uid,
        }
    }
}

impl From<model::PodLookup> for PodLookup {
    fn from(lookup: model::PodLookup) -> Self {
        match lookup {
            model::PodLookup::Cached(pod) => Self::Cached(pod.into()),
            model::PodLookup::Live(pod) => Self::Live(pod.into()),
            model::PodLookup::NotFound => Self::NotFound,
            model::PodLookup::Unknown => Self::Unknown,
        }
    }
}

impl From<model::Reservation> for Reservation {
    fn from(r: model::Reservation) -> Self {
        Self {
            consumer: r.consumer,
            deleted: r.deleted,
            pod: r.pod.into(),
        }
    }
}

impl From<model::ClaimInput> for ClaimInput {
    fn from(input: model::ClaimInput) -> Self {
        Self {
            claim: input.claim,
            reservations: input.reservations.into_iter().map(Into::into).collect(),
            owner_pod: input.owner_pod.map(Into::into),
        }
    }
}
