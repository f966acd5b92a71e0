//! resource-claim decisions (upstream-behaviour §3): pod keys (§3.4-3.6) and
//! claim keys (§3.7).

mod claim;
mod pod;

pub use claim::{ClaimWrite, MAX_ACTIONS as MAX_CLAIM_ACTIONS, plan_claim};
pub use pod::{PodWrite, max_pod_actions, plan_pod};

use rekon_guest::model::{ConsumerReference, Target};

use crate::validate::{MAX_NAME, bounded};

fn bounded_target(field: &str, t: &Target) -> Result<(), String> {
    bounded(&format!("{field} name"), &t.name, MAX_NAME)?;
    bounded(&format!("{field} uid"), &t.uid, MAX_NAME)?;
    bounded(
        &format!("{field} resourceVersion"),
        &t.resource_version,
        MAX_NAME,
    )
}

fn bounded_consumer(c: &ConsumerReference) -> Result<(), String> {
    bounded("consumer apiGroup", &c.api_group, MAX_NAME)?;
    bounded("consumer resource", &c.resource, MAX_NAME)?;
    bounded("consumer name", &c.name, MAX_NAME)?;
    bounded("consumer uid", &c.uid, MAX_NAME)
}
