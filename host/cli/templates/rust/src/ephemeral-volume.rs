//! A `rekon:reconcile/ephemeral-volume` decision module, made by `rekon new`.
//!
//! The sample decision creates nothing. Write yours in `decide`; the host calls
//! it once per pod key, in a fresh instance each time.

wit_bindgen::generate!({ path: "wit", world: "rekon:reconcile/ephemeral-volume@0.2.0" });

use exports::rekon::reconcile::volume_decider::{Guest, VolumeDecision, VolumeInput};

struct Decider;

impl Guest for Decider {
    fn decide(_input: VolumeInput) -> VolumeDecision {
        VolumeDecision {
            actions: Vec::new(),
        }
    }
}

export!(Decider);
