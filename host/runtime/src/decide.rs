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

/// Whether creating a memory image failed only because its memfd could not be
/// sealed yet (EBUSY: pages of it still referenced).
fn sealing_was_busy(err: &wasmtime::Error) -> bool {
    err.chain()
        .any(|cause| cause.to_string().contains("cannot add seals to the memfd"))
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
        if !self.primed.load(std::sync::atomic::Ordering::Acquire) {
            // The first instance creates the memory images; a failure here is
            // reported by the decision below.
            let _ = self.instantiate();
        }
        let mut store = self.new_store();
        binding.decide(&mut store, input).map_err(|err| match err {
            CallError::Instantiate(err) => self.classify(err, Phase::Instantiate, store.data()),
            CallError::Call(err) => self.classify(err, Phase::Call, store.data()),
        })
    }

    /// Creates a fresh store and instance and drops them: the fixed cost of
    /// every decision, and a health check before a guest is published.
    ///
    /// The first instance of a module creates its memory images (a sealed
    /// memfd each), and sealing fails with EBUSY while the kernel still holds
    /// references to the freshly written pages (seen under a loaded machine):
    /// that is retried a few times, briefly. Later instances reuse the images.
    pub fn instantiate(&self) -> Result<(), RuntimeError> {
        let mut retries = 0;
        loop {
            let mut store = self.new_store();
            match self.instance_pre().instantiate(&mut store) {
                Ok(_) => {
                    self.primed
                        .store(true, std::sync::atomic::Ordering::Release);
                    return Ok(());
                }
                Err(err) if retries < 5 && sealing_was_busy(&err) => {
                    retries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10 << retries));
                }
                Err(err) => return Err(self.classify(err, Phase::Instantiate, store.data())),
            }
        }
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
