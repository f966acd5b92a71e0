//! A `rekon:reconcile/pvc-protection` decision module, made by `rekon new`.
//!
//! The sample decision adds the `kubernetes.io/pvc-protection` finalizer to a
//! PVC that lacks it and decides nothing else. Write yours in `decide`; the
//! host calls it once per PVC key, in a fresh instance each time.

wit_bindgen::generate!({ path: "wit", world: "rekon:reconcile/pvc-protection@0.2.0" });

use exports::rekon::reconcile::pvc_decider::{Guest, PvcAction, PvcDecision, PvcInput};
use rekon::reconcile::types::Target;

const FINALIZER: &str = "kubernetes.io/pvc-protection";

struct Decider;

impl Guest for Decider {
    fn decide(input: PvcInput) -> PvcDecision {
        let pvc = input.pvc;
        if pvc.deleting || pvc.finalizers.iter().any(|f| f == FINALIZER) {
            return PvcDecision::Actions(Vec::new());
        }
        PvcDecision::Actions(vec![PvcAction::AddFinalizer(Target {
            name: pvc.name,
            uid: pvc.uid,
            resource_version: pvc.resource_version,
        })])
    }
}

export!(Decider);
