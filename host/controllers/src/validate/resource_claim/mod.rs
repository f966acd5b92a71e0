//! resource-claim decisions (upstream-behaviour §3): pod keys (§3.4-3.6) and
//! claim keys (§3.7).

mod claim;
mod pod;

pub use claim::{ClaimWrite, MAX_ACTIONS as MAX_CLAIM_ACTIONS, plan_claim};
pub use pod::{PodWrite, max_pod_actions, plan_pod};

use rekon_guest::model::{ConsumerReference, Target};

use super::{MAX_NAME, bounded};

/// The longest generateName base the controller hands to the API server.
const MAX_GENERATE_NAME_BASE: usize = 57;

/// §3.5 step 6: `<pod>-<pod claim>-`, or, when that is longer than 57 bytes,
/// both parts cut in proportion to their share of the untruncated base and
/// joined by one hyphen, without a trailing hyphen.
pub fn generate_name(pod: &str, pod_claim: &str) -> String {
    let base = pod.len() + pod_claim.len() + 2;
    if base <= MAX_GENERATE_NAME_BASE {
        return format!("{pod}-{pod_claim}-");
    }
    let cut = |s: &str| {
        let len = s.len() * MAX_GENERATE_NAME_BASE / base;
        s[..s.floor_char_boundary(len)].to_string()
    };
    format!("{}-{}", cut(pod), cut(pod_claim))
}

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

#[cfg(test)]
mod tests {
    use super::generate_name;

    #[test]
    fn generate_name_follows_the_truncation_rule() {
        assert_eq!(
            generate_name("test-pod", "acme-resource"),
            "test-pod-acme-resource-"
        );
        let long = generate_name(&"a".repeat(40), &"b".repeat(30));
        assert_eq!(long, format!("{}-{}", "a".repeat(31), "b".repeat(23)));
        // 27 + 1 + 28 + 1 = 57 is kept; 58 is cut.
        assert!(generate_name(&"p".repeat(27), &"c".repeat(28)).ends_with('-'));
        assert_eq!(
            generate_name(&"p".repeat(28), &"c".repeat(28)),
            format!("{}-{}", "p".repeat(27), "c".repeat(27))
        );
    }
}
