//! Typed decision calls: model in, model out, one fresh instance per call.
//!
//! A failure (trap, deadline, memory cap) fails that decision only; the store
//! is dropped with it and the engine keeps serving.

use rekon_contract::{
    BindWorld, CallError, ControllerDecision, ControllerInput, ControllerWorld, PvcProtectionWorld,
    ResourceClaimDecision, ResourceClaimInput, ResourceClaimWorld, model,
};
use wasmtime::Trap;

use crate::error::{Failure, RuntimeError};
use crate::guest::GuestPre;
use crate::state::DecisionState;

/// The error and its causes on one line, for logs.
fn one_line(err: &wasmtime::Error) -> String {
    err.chain()
        .map(|cause| cause.to_string())
        .collect::<Vec<_>>()
        .join(": ")
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
        self.decide::<PvcProtectionWorld>(input)
    }

    /// `claim-decider.decide-pod`.
    pub fn decide_pod(&self, input: model::PodInput) -> Result<model::PodDecision, RuntimeError> {
        match self.decide::<ResourceClaimWorld>(ResourceClaimInput::Pod(input))? {
            ResourceClaimDecision::Pod(decision) => Ok(decision),
            ResourceClaimDecision::Claim(_) => {
                unreachable!("decide-pod answers with a pod decision")
            }
        }
    }

    /// `controller.describe`: what a controller module is.
    pub fn describe_controller(
        &self,
    ) -> Result<rekon_contract::controller::Description, RuntimeError> {
        match self.decide::<ControllerWorld>(ControllerInput::Describe)? {
            ControllerDecision::Describe(description) => Ok(description),
            ControllerDecision::Decide(_) => unreachable!("describe answers with a description"),
        }
    }

    /// `controller.decide`.
    pub fn decide_controller(
        &self,
        input: rekon_contract::controller::Input,
    ) -> Result<rekon_contract::controller::Decision, RuntimeError> {
        match self.decide::<ControllerWorld>(ControllerInput::Decide(input))? {
            ControllerDecision::Decide(decision) => Ok(decision),
            ControllerDecision::Describe(_) => unreachable!("decide answers with a decision"),
        }
    }

    /// `claim-decider.decide-claim`.
    pub fn decide_claim(
        &self,
        input: model::ClaimInput,
    ) -> Result<model::ClaimDecision, RuntimeError> {
        match self.decide::<ResourceClaimWorld>(ResourceClaimInput::Claim(input))? {
            ResourceClaimDecision::Claim(decision) => Ok(decision),
            ResourceClaimDecision::Pod(_) => {
                unreachable!("decide-claim answers with a claim decision")
            }
        }
    }

    /// One decision of world `W` in a fresh, limited instance, through the
    /// binding of whichever contract version the guest exports.
    fn call<W: BindWorld>(&self, input: W::Input) -> Result<W::Decision, RuntimeError> {
        let Some(binding) = self.binding::<W>() else {
            return Err(self.wrong_world(W::function(&input)));
        };
        let mut store = self.new_store();
        binding.decide(&mut store, input).map_err(|err| match err {
            CallError::Instantiate(err) => self.classify(err, Phase::Instantiate, store.data()),
            CallError::Call(err) => self.classify(err, Phase::Call, store.data()),
        })
    }

    /// Creates a fresh store and instance and drops them: the fixed cost of
    /// every decision, and a health check before a guest is published.
    pub fn instantiate(&self) -> Result<(), RuntimeError> {
        let mut store = self.new_store();
        self.instance_pre()
            .instantiate(&mut store)
            .map(drop)
            .map_err(|err| self.classify(err, Phase::Instantiate, store.data()))
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

    pub(crate) fn wrong_world(&self, decision: &str) -> RuntimeError {
        RuntimeError {
            guest: self.id().clone(),
            key: None,
            failure: Failure::WrongWorld {
                world: self.world().name(),
                decision: decision.to_owned(),
            },
        }
    }
}

/// A WIT world the runtime can call: the one entry point generic host code uses
/// (`guest.decide::<W>(input)`), whatever contract version the guest exports.
/// Every world the contract binds is one.
pub trait GuestWorld: BindWorld {}

impl<W: BindWorld> GuestWorld for W {}

impl GuestPre {
    /// One decision of world `W` in a fresh, limited instance.
    pub fn decide<W: GuestWorld>(&self, input: W::Input) -> Result<W::Decision, RuntimeError> {
        self.call::<W>(input)
    }
}
