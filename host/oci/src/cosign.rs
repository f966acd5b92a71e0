//! cosign-compatible key-based signatures.
//!
//! A signature of manifest `sha256:D` in `REGISTRY/REPO` lives at the tag
//! `REGISTRY/REPO:sha256-D.sig`: an OCI manifest whose layers
//! (`application/vnd.dev.cosign.simplesigning.v1+json`) are simple-signing
//! payloads `{"critical":{"identity":{"docker-reference":REPO},"image":{"docker-manifest-digest":"sha256:D"},"type":"cosign container image signature"},"optional":null}`,
//! each annotated `dev.cosignproject.cosign/signature` = base64 of the ASN.1 DER
//! ECDSA P-256 signature over the payload's SHA-256.

use crate::error::OciError;
use crate::transport::RegistryOptions;

/// A freshly generated ECDSA P-256 key pair, PEM encoded.
#[derive(Clone)]
pub struct SigningKey {
    /// PKCS#8 private key (`-----BEGIN PRIVATE KEY-----`), unencrypted.
    pub private_pem: String,
    /// SubjectPublicKeyInfo (`-----BEGIN PUBLIC KEY-----`), what cosign's `--key` reads.
    pub public_pem: String,
}

/// Generates an ECDSA P-256 key pair.
pub fn generate_key() -> SigningKey {
    todo!()
}

/// Signs the manifest that `reference` (`REGISTRY/REPO@sha256:...`, or a tag,
/// resolved first) names with `private_key_pem` (PKCS#8 or SEC1 P-256, unencrypted)
/// and pushes the signature; returns the signature's reference
/// (`REGISTRY/REPO:sha256-<digest>.sig`). Signatures already there are kept.
pub async fn sign(reference: &str, private_key_pem: &[u8], options: &RegistryOptions) -> Result<String, OciError> {
    let _ = (reference, private_key_pem, options);
    todo!()
}

/// Verifies that the manifest `reference` names has a signature valid under
/// `public_key_pem`; returns the manifest digest. No signature tag is
/// [`OciError::Unsigned`]; signatures that do not verify (or sign another
/// digest) are [`OciError::BadSignature`].
pub async fn verify(reference: &str, public_key_pem: &[u8], options: &RegistryOptions) -> Result<String, OciError> {
    let _ = (reference, public_key_pem, options);
    todo!()
}
