//! A `rekon:reconcile/resource-claim` decision module, made by `rekon new`.
//!
//! The sample decisions do nothing: no claim to create for a pod, no change to
//! a claim. Write yours in `decide_pod` and `decide_claim`; the host calls them
//! once per key, in a fresh instance each time.

wit_bindgen::generate!({ path: "wit", world: "rekon:reconcile/resource-claim@0.2.0" });

use exports::rekon::reconcile::claim_decider::{
    ClaimDecision, ClaimInput, Guest, PodDecision, PodInput,
};

struct Decider;

impl Guest for Decider {
    fn decide_pod(_input: PodInput) -> PodDecision {
        PodDecision {
            actions: Vec::new(),
            error: None,
        }
    }

    fn decide_claim(_input: ClaimInput) -> ClaimDecision {
        ClaimDecision::Actions(Vec::new())
    }
}

export!(Decider);
