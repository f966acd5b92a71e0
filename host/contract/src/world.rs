//! One trait per WIT world: what a decision of that world takes and returns.
//!
//! Everything generic in the host (deciders, shadows, guards, the decision pool,
//! `rekon eval`) is written once over [`WitWorld`]; adding a world means one
//! marker type and one impl (here, or in the world's own module with its
//! bindings, as `ephemeral_volume`) and one line in [`crate::visit_worlds`].

use std::fmt::Debug;

use rekon_guest::model::{ClaimDecision, ClaimInput, PodDecision, PodInput, PvcDecision, PvcInput};
use serde::Serialize;
use serde::de::{DeserializeOwned, Error as _};
use serde_json::Value;

/// A controller world of `rekon:reconcile`, in its version-independent model form.
pub trait WitWorld: Send + Sync + 'static {
    /// The WIT world name, without package or version (`pvc-protection`).
    const NAME: &'static str;
    /// The exported interface, without package or version (`pvc-decider`).
    const EXPORT: &'static str;
    /// The exported decision functions, by WIT name.
    const FUNCTIONS: &'static [&'static str];
    /// Each module of this world is a controller of its own (the generic
    /// `controller` world), rather than the one module of a built-in controller.
    const GENERIC: bool = false;
    /// What one decision is given.
    type Input: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// What one decision returns.
    type Decision: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// The WIT function an input is for (one of [`Self::FUNCTIONS`]).
    fn function(input: &Self::Input) -> &'static str;

    /// The input of `function` (one of [`Self::FUNCTIONS`]) from its serde form,
    /// as `rekon eval` and `rekon test` read it: a one-function world takes it as is.
    fn input_of(function: &str, value: Value) -> Result<Self::Input, serde_json::Error> {
        let _ = function;
        serde_json::from_value(value)
    }

    /// What `function` returns, from its serde form (the inverse of [`Self::decision_value`]).
    fn decision_of(function: &str, value: Value) -> Result<Self::Decision, serde_json::Error> {
        let _ = function;
        serde_json::from_value(value)
    }

    /// The serde form of a decision, as `rekon eval` prints it.
    fn decision_value(decision: &Self::Decision) -> Value {
        serde_json::to_value(decision).expect("model values always serialise")
    }
}

/// `rekon:reconcile/pvc-protection`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PvcProtectionWorld;

impl WitWorld for PvcProtectionWorld {
    const NAME: &'static str = "pvc-protection";
    const EXPORT: &'static str = "pvc-decider";
    const FUNCTIONS: &'static [&'static str] = &["decide"];
    type Input = PvcInput;
    type Decision = PvcDecision;

    fn function(_: &PvcInput) -> &'static str {
        "decide"
    }
}

/// `rekon:reconcile/resource-claim`: one world, two decisions (pod key, claim key).
#[derive(Debug, Clone, Copy, Default)]
pub struct ResourceClaimWorld;

/// The input of a resource-claim decision.
// One value per decision, moved straight into the guest: boxing buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResourceClaimInput {
    Pod(PodInput),
    Claim(ClaimInput),
}

/// The result of a resource-claim decision (same variant as its input).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResourceClaimDecision {
    Pod(PodDecision),
    Claim(ClaimDecision),
}

impl WitWorld for ResourceClaimWorld {
    const NAME: &'static str = "resource-claim";
    const EXPORT: &'static str = "claim-decider";
    const FUNCTIONS: &'static [&'static str] = &["decide-pod", "decide-claim"];
    type Input = ResourceClaimInput;
    type Decision = ResourceClaimDecision;

    fn function(input: &ResourceClaimInput) -> &'static str {
        match input {
            ResourceClaimInput::Pod(_) => "decide-pod",
            ResourceClaimInput::Claim(_) => "decide-claim",
        }
    }

    fn input_of(function: &str, value: Value) -> Result<ResourceClaimInput, serde_json::Error> {
        match function {
            "decide-pod" => serde_json::from_value(value).map(ResourceClaimInput::Pod),
            "decide-claim" => serde_json::from_value(value).map(ResourceClaimInput::Claim),
            other => Err(serde_json::Error::custom(format!(
                "resource-claim has no function `{other}`"
            ))),
        }
    }

    fn decision_of(
        function: &str,
        value: Value,
    ) -> Result<ResourceClaimDecision, serde_json::Error> {
        match function {
            "decide-pod" => serde_json::from_value(value).map(ResourceClaimDecision::Pod),
            "decide-claim" => serde_json::from_value(value).map(ResourceClaimDecision::Claim),
            other => Err(serde_json::Error::custom(format!(
                "resource-claim has no function `{other}`"
            ))),
        }
    }

    fn decision_value(decision: &ResourceClaimDecision) -> Value {
        match decision {
            ResourceClaimDecision::Pod(d) => serde_json::to_value(d),
            ResourceClaimDecision::Claim(d) => serde_json::to_value(d),
        }
        .expect("model values always serialise")
    }
}
