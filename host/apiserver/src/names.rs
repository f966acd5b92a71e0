//! Object name rules: DNS-1123 validation and `generateName`.

use rand::Rng;

/// Alphabet of generated suffixes (`k8s.io/apimachinery/pkg/util/rand` `alphanums`: no vowels,
/// no confusable characters).
pub const GENERATED_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
pub const GENERATED_SUFFIX_LEN: usize = 5;
/// `apiserver/pkg/storage/names`: prefixes are cut so the name fits 63 characters.
pub const MAX_GENERATED_PREFIX_LEN: usize = 63 - GENERATED_SUFFIX_LEN;

const SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MESSAGE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

pub fn generate_name(prefix: &str, rng: &mut impl Rng) -> String {
    let cut = prefix
        .char_indices()
        .nth(MAX_GENERATED_PREFIX_LEN)
        .map(|(i, _)| i)
        .unwrap_or(prefix.len());
    let mut name = prefix[..cut].to_string();
    for _ in 0..GENERATED_SUFFIX_LEN {
        let i = rng.random_range(0..GENERATED_ALPHABET.len());
        name.push(GENERATED_ALPHABET[i] as char);
    }
    name
}

fn is_label(part: &str) -> bool {
    let bytes = part.as_bytes();
    !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

/// Problems with `name` as a DNS-1123 subdomain (most kinds); empty when valid.
pub fn subdomain_errors(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.len() > 253 {
        errors.push("must be no more than 253 characters".to_string());
    }
    if !name.split('.').all(is_label) {
        errors.push(SUBDOMAIN_MESSAGE.to_string());
    }
    errors
}

/// Problems with `name` as a DNS-1123 label (namespaces); empty when valid.
pub fn label_errors(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !is_label(name) {
        errors.push(LABEL_MESSAGE.to_string());
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn generated_names_use_the_alphabet_and_cut_the_prefix() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let long = "a".repeat(80);
        let name = generate_name(&long, &mut rng);
        assert_eq!(name.len(), 63);
        assert!(name[58..].bytes().all(|b| GENERATED_ALPHABET.contains(&b)));
        assert!(generate_name("pod-", &mut rng).starts_with("pod-"));
    }

    #[test]
    fn dns_rules() {
        assert!(subdomain_errors("a.b-c").is_empty());
        assert!(!subdomain_errors("Bad_Name").is_empty());
        assert!(!subdomain_errors("-a").is_empty());
        assert!(!label_errors("a.b").is_empty());
        assert!(label_errors("kube-system").is_empty());
    }
}
