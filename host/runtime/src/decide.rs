//! Typed decision calls: model in, model out, one fresh instance per call.
//!
//! A failure (trap, deadline, memory cap) fails that decision only; the store
//! is dropped with it and the engine keeps serving.

use std::time::Duration;

use rekon_contract::model;
use wasmtime::{Store, Trap};

use crate::guest::{Bound, GuestPre};
use crate::id::GuestId;
use crate::state::DecisionState;
use crate::world::{Decision, World};

/// A decision that failed, naming the guest and, when the caller attached it,
/// the key being reconciled.
#[derive(Debug, thiserror::Error)]
#[error("guest {guest}{}: {failure}", key_suffix(.key))]
pub struct RuntimeError {
    pub guest: GuestId,
    pub key: Option<String>,
    pub failure: Failure,
}

#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("deadline of {0:?} exceeded")]
    DeadlineExceeded(Duration),
    #[error("memory cap of {cap} bytes exceeded (asked for {requested} bytes)")]
    MemoryCapExceeded { cap: usize, requested: usize },
    /// `message` is the trap itself; `detail` adds the wasm backtrace.
    #[error("{message}{}", stderr_suffix(.stderr))]
    Trap {
        message: String,
        stderr: String,
        detail: String,
    },
    /// The decision (or one import call's arguments) was larger than
    /// [`crate::Limits::result_bytes`]; it was not copied out.
    #[error("result too large: more than {limit} bytes copied out of the guest in one call")]
    ResultTooLarge { limit: usize },
    #[error("cannot instantiate: {0}")]
    Instantiate(String),
    #[error("is a {world} guest and does not export `{decision}`")]
    WrongWorld { world: World, decision: Decision },
}

fn key_suffix(key: &Option<String>) -> String {
    key.as_ref()
        .map(|k| format!(" (key {k})"))
        .unwrap_or_default()
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; guest stderr: {stderr}")
    }
}

/// The error and its causes on one line, for logs.
fn one_line(err: &wasmtime::Error) -> String {
    err.chain()
        .map(|cause| cause.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}

impl RuntimeError {
    /// Names the key whose reconcile this decision was for.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }
}

/// Where a call failed: instantiation errors that are not the guest's fault
/// (a full instance pool) are reported differently from traps.
#[derive(Clone, Copy)]
enum Phase {
    Instantiate,
    Call,
}

impl GuestPre {
    /// `pvc-decider.decide`.
    pub fn decide_pvc(&self, input: model::PvcInput) -> Result<model::PvcDecision, RuntimeError> {
        match &self.bound {
            Bound::PvcV0_1(pre) => self.run(|store, phase| {
                let guest = pre.instantiate(&mut *store)?;
                *phase = Phase::Call;
                let decision = guest
                    .rekon_reconcile_pvc_decider()
                    .call_decide(&mut *store, &input.into())?;
                Ok(decision.into())
            }),
            _ => Err(self.wrong_world(Decision::Decide)),
        }
    }

    /// `claim-decider.decide-pod`.
    pub fn decide_pod(&self, input: model::PodInput) -> Result<model::PodDecision, RuntimeError> {
        match &self.bound {
            Bound::ClaimV0_1(pre) => self.run(|store, phase| {
                let guest = pre.instantiate(&mut *store)?;
                *phase = Phase::Call;
                let decision = guest
                    .rekon_reconcile_claim_decider()
                    .call_decide_pod(&mut *store, &input.into())?;
                Ok(decision.into())
            }),
            _ => Err(self.wrong_world(Decision::DecidePod)),
        }
    }

    /// `claim-decider.decide-claim`.
    pub fn decide_claim(
        &self,
        input: model::ClaimInput,
    ) -> Result<model::ClaimDecision, RuntimeError> {
        match &self.bound {
            Bound::ClaimV0_1(pre) => self.run(|store, phase| {
                let guest = pre.instantiate(&mut *store)?;
                *phase = Phase::Call;
                let decision = guest
                    .rekon_reconcile_claim_decider()
                    .call_decide_claim(&mut *store, &input.into())?;
                Ok(decision.into())
            }),
            _ => Err(self.wrong_world(Decision::DecideClaim)),
        }
    }

    /// Creates a fresh store and instance and drops them: the fixed cost of
    /// every decision, and a health check before a guest is published.
    pub fn instantiate(&self) -> Result<(), RuntimeError> {
        self.run(|store, _| match &self.bound {
            Bound::PvcV0_1(pre) => pre.instantiate(store).map(drop),
            Bound::ClaimV0_1(pre) => pre.instantiate(store).map(drop),
        })
    }

    fn run<R>(
        &self,
        call: impl FnOnce(&mut Store<DecisionState>, &mut Phase) -> wasmtime::Result<R>,
    ) -> Result<R, RuntimeError> {
        let mut store = self.new_store();
        let mut phase = Phase::Instantiate;
        call(&mut store, &mut phase).map_err(|err| self.classify(err, phase, store.data()))
    }

    fn classify(&self, err: wasmtime::Error, phase: Phase, state: &DecisionState) -> RuntimeError {
        let failure = if let Some(requested) = state.limiter.refused() {
            Failure::MemoryCapExceeded {
                cap: state.limiter.cap(),
                requested,
            }
        } else if crate::limits::copied_too_much(&err) {
            Failure::ResultTooLarge {
                limit: self.limits().result_bytes,
            }
        } else if err.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
            Failure::DeadlineExceeded(self.limits().deadline)
        } else {
            match phase {
                Phase::Instantiate => Failure::Instantiate(one_line(&err)),
                Phase::Call => Failure::Trap {
                    message: match err.downcast_ref::<Trap>() {
                        Some(trap) => trap.to_string(),
                        None => format!("trapped: {}", err.root_cause()),
                    },
                    stderr: state.stderr(),
                    detail: format!("{err:?}"),
                },
            }
        };
        RuntimeError {
            guest: self.id().clone(),
            key: None,
            failure,
        }
    }

    fn wrong_world(&self, decision: Decision) -> RuntimeError {
        RuntimeError {
            guest: self.id().clone(),
            key: None,
            failure: Failure::WrongWorld {
                world: self.world(),
                decision,
            },
        }
    }
}

/// A WIT world the runtime can call: the one entry point generic host code uses
/// (`guest.decide::<W>(input)`), whatever contract version the guest exports.
pub trait GuestWorld: rekon_contract::WitWorld {
    /// The world as the loader names it.
    const ID: World;
    fn call(guest: &GuestPre, input: Self::Input) -> Result<Self::Decision, RuntimeError>;
}

impl GuestWorld for rekon_contract::PvcProtectionWorld {
    const ID: World = World::PvcProtection;

    fn call(guest: &GuestPre, input: model::PvcInput) -> Result<model::PvcDecision, RuntimeError> {
        guest.decide_pvc(input)
    }
}

impl GuestWorld for rekon_contract::ResourceClaimWorld {
    const ID: World = World::ResourceClaim;

    fn call(
        guest: &GuestPre,
        input: rekon_contract::ResourceClaimInput,
    ) -> Result<rekon_contract::ResourceClaimDecision, RuntimeError> {
        use rekon_contract::{ResourceClaimDecision as D, ResourceClaimInput as I};
        match input {
            I::Pod(input) => guest.decide_pod(input).map(D::Pod),
            I::Claim(input) => guest.decide_claim(input).map(D::Claim),
        }
    }
}

impl GuestPre {
    /// One decision of world `W` in a fresh, limited instance.
    pub fn decide<W: GuestWorld>(&self, input: W::Input) -> Result<W::Decision, RuntimeError> {
        W::call(self, input)
    }
}
