//! The claim the DRA ResourceClaim controller generates for a pod claim from its
//! template (upstream-behaviour §3.5 step 6). The reference guest creates it and
//! the host checks a guest's `CreateClaim` against it: one derivation, two users.

use crate::model::{NewClaim, OwnerReference, Pod, PodResourceClaim, ResourceClaimTemplate};

/// Marks a claim as generated for the pod claim named in its value.
pub const POD_CLAIM_NAME_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";

/// The claim generated from `template` for `pod_claim`: the template's labels,
/// its annotations plus ours (an annotation of the same key is replaced — upstream
/// mutates the cached template's map in place, we copy), its spec verbatim, owned
/// by the pod (controller, blockOwnerDeletion).
pub fn generated_claim(
    pod: &Pod,
    pod_claim: &PodResourceClaim,
    template: &ResourceClaimTemplate,
) -> NewClaim {
    let mut annotations: Vec<(String, String)> = template
        .meta
        .annotations
        .iter()
        .filter(|(key, _)| key != POD_CLAIM_NAME_ANNOTATION)
        .cloned()
        .collect();
    annotations.push((POD_CLAIM_NAME_ANNOTATION.to_owned(), pod_claim.name.clone()));
    NewClaim {
        pod_claim_name: pod_claim.name.clone(),
        generate_name: generate_name(&pod.meta.name, &pod_claim.name),
        template_name: template.meta.name.clone(),
        labels: template.meta.labels.clone(),
        annotations,
        owner_references: vec![OwnerReference {
            api_version: "v1".to_owned(),
            kind: "Pod".to_owned(),
            name: pod.meta.name.clone(),
            uid: pod.meta.uid.clone(),
            controller: true,
            block_owner_deletion: true,
        }],
        claim_spec_json: template.claim_spec_json.clone(),
    }
}

/// The longest base the controller hands to the API server; the server appends
/// five random characters (and cuts longer bases to 58 itself).
const MAX_BASE_LEN: usize = 57;

/// `<pod>-<pod claim>-`, or, when that is longer than 57 bytes, both parts cut in
/// proportion to their share of the untruncated base and joined by one hyphen,
/// without a trailing hyphen (upstream's rule, so names stay comparable).
pub fn generate_name(pod_name: &str, pod_claim_name: &str) -> String {
    let base_len = pod_name.len() + pod_claim_name.len() + 2;
    let mut name = String::with_capacity(base_len.min(MAX_BASE_LEN));
    if base_len <= MAX_BASE_LEN {
        name.push_str(pod_name);
        name.push('-');
        name.push_str(pod_claim_name);
        name.push('-');
    } else {
        name.push_str(prefix(pod_name, pod_name.len() * MAX_BASE_LEN / base_len));
        name.push('-');
        name.push_str(prefix(
            pod_claim_name,
            pod_claim_name.len() * MAX_BASE_LEN / base_len,
        ));
    }
    name
}

/// At most `len` bytes of `s`. Object names are DNS labels (ASCII), so this is a
/// byte cut; the char-boundary floor only keeps a malformed name from panicking.
fn prefix(s: &str, len: usize) -> &str {
    &s[..s.floor_char_boundary(len)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_base_is_pod_claim_and_trailing_hyphen() {
        assert_eq!(
            generate_name("test-pod", "acme-resource"),
            "test-pod-acme-resource-"
        );
    }

    #[test]
    fn long_base_is_cut_in_proportion_without_trailing_hyphen() {
        let name = generate_name(&"a".repeat(40), &"b".repeat(30));
        assert_eq!(name, format!("{}-{}", "a".repeat(31), "b".repeat(23)));
        assert_eq!(name.len(), 55);
    }

    #[test]
    fn base_of_exactly_57_is_kept() {
        // 27 + 1 + 28 + 1 = 57
        let name = generate_name(&"p".repeat(27), &"c".repeat(28));
        assert_eq!(name, format!("{}-{}-", "p".repeat(27), "c".repeat(28)));
    }

    #[test]
    fn base_of_58_is_cut() {
        // 28 + 1 + 28 + 1 = 58; 28 * 57 / 58 = 27
        let name = generate_name(&"p".repeat(28), &"c".repeat(28));
        assert_eq!(name, format!("{}-{}", "p".repeat(27), "c".repeat(27)));
    }

    #[test]
    fn cut_never_exceeds_the_limit() {
        for pod_len in 1..80 {
            for claim_len in 1..80 {
                let name = generate_name(&"p".repeat(pod_len), &"c".repeat(claim_len));
                assert!(name.len() <= MAX_BASE_LEN, "{pod_len}/{claim_len}: {name}");
            }
        }
    }

    #[test]
    fn non_ascii_input_does_not_panic() {
        let name = generate_name(&"é".repeat(40), &"ß".repeat(30));
        assert!(name.len() <= MAX_BASE_LEN);
    }
}
