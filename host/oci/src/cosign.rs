//! cosign-compatible key-based signatures.
//!
//! A signature of manifest `sha256:D` in `REGISTRY/REPO` lives at the tag
//! `REGISTRY/REPO:sha256-D.sig`: an OCI manifest whose layers
//! (`application/vnd.dev.cosign.simplesigning.v1+json`) are simple-signing
//! payloads
//! `{"critical":{"identity":{"docker-reference":"REGISTRY/REPO"},"image":{"docker-manifest-digest":"sha256:D"},"type":"cosign container image signature"},"optional":null}`,
//! each annotated `dev.cosignproject.cosign/signature` = base64 of the ASN.1 DER
//! ECDSA P-256 signature over the payload's SHA-256. This is what
//! `cosign sign --key` writes (with `--tlog-upload=false`) and what
//! `cosign verify --key --insecure-ignore-tlog` reads.
//!
//! The crypto is RustCrypto's `p256`; the artifact format is written here
//! rather than through the `sigstore` crate, whose `cosign` feature also builds
//! Fulcio, Rekor and OAuth clients and, with rustls, aws-lc-rs (see the book
//! chapter "Delivery: OCI" for the comparison).

use std::collections::BTreeMap;

use base64::Engine as _;
use oci_client::manifest::OciDescriptor;
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{DerSignature, Signature, VerifyingKey};
use p256::pkcs8::{
    DecodePrivateKey as _, DecodePublicKey as _, EncodePrivateKey as _, EncodePublicKey as _,
    LineEnding,
};

use crate::error::OciError;
use crate::layout::{Blob, image_manifest, parse_manifest, sha256_digest};
use crate::reference::ModuleRef;
use crate::session::MAX_SIGNATURE_PAYLOAD_BYTES;
use crate::transport::{Client, RegistryOptions, Transport, registry_error};

/// The layer media type of a simple-signing payload.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

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
    let key = p256::ecdsa::SigningKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
    let private_pem = key
        .to_pkcs8_pem(LineEnding::LF)
        .expect("a P-256 key encodes")
        .to_string();
    let public_pem = key
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .expect("a P-256 key encodes");
    SigningKey {
        private_pem,
        public_pem,
    }
}

/// Signs the manifest that `reference` (`REGISTRY/REPO@sha256:...`, or a tag,
/// resolved first) names with `private_key_pem` (PKCS#8 or SEC1 P-256, unencrypted)
/// and pushes the signature; returns the signature's reference
/// (`REGISTRY/REPO:sha256-<digest>.sig`). Signatures already there are kept.
pub async fn sign(
    reference: &str,
    private_key_pem: &[u8],
    options: &RegistryOptions,
) -> Result<String, OciError> {
    let key = private_key(private_key_pem)?;
    let module = ModuleRef::parse(reference)?;
    let transport = Transport::from_options(options)?;
    transport
        .run(
            &module,
            options.insecure,
            options.auth.as_ref(),
            async |client| sign_with(client, &module, &key).await,
        )
        .await
}

/// Verifies that the manifest `reference` names has a signature valid under
/// `public_key_pem`; returns the manifest digest. No signature tag is
/// [`OciError::Unsigned`]; signatures that do not verify (or sign another
/// digest) are [`OciError::BadSignature`].
pub async fn verify(
    reference: &str,
    public_key_pem: &[u8],
    options: &RegistryOptions,
) -> Result<String, OciError> {
    let key = public_key(public_key_pem)?;
    let module = ModuleRef::parse(reference)?;
    let transport = Transport::from_options(options)?;
    transport
        .run(
            &module,
            options.insecure,
            options.auth.as_ref(),
            async |client| {
                let digest = manifest_digest(client, &module).await?;
                verify_with(client, &module, &digest, std::slice::from_ref(&key)).await?;
                Ok(digest)
            },
        )
        .await
}

/// Reads a cosign public key (ECDSA P-256, PEM `PUBLIC KEY`).
pub(crate) fn public_key(pem: &[u8]) -> Result<VerifyingKey, OciError> {
    let text =
        std::str::from_utf8(pem).map_err(|_| key_error("public key", "not UTF-8 PEM".into()))?;
    VerifyingKey::from_public_key_pem(text.trim()).map_err(|err| {
        key_error(
            "public key",
            format!("not an ECDSA P-256 `PUBLIC KEY` PEM: {err}"),
        )
    })
}

/// The sha256 of a public key's DER encoding, to remember which key verified what.
pub(crate) fn fingerprint(key: &VerifyingKey) -> String {
    let der = key.to_public_key_der().expect("a P-256 key encodes");
    sha256_digest(der.as_bytes())
}

fn private_key(pem: &[u8]) -> Result<p256::ecdsa::SigningKey, OciError> {
    let text =
        std::str::from_utf8(pem).map_err(|_| key_error("private key", "not UTF-8 PEM".into()))?;
    let text = text.trim();
    if text.contains("ENCRYPTED") {
        return Err(key_error(
            "private key",
            "encrypted keys (cosign.key) are not supported: use an unencrypted PKCS#8 or SEC1 P-256 key, e.g. from `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256` or `rekon generate-key`".into(),
        ));
    }
    p256::ecdsa::SigningKey::from_pkcs8_pem(text)
        .or_else(|_| {
            use p256::elliptic_curve::SecretKey;
            SecretKey::<p256::NistP256>::from_sec1_pem(text).map(p256::ecdsa::SigningKey::from)
        })
        .map_err(|err| {
            key_error(
                "private key",
                format!("not an unencrypted ECDSA P-256 PKCS#8 or SEC1 PEM: {err}"),
            )
        })
}

fn key_error(what: &str, cause: String) -> OciError {
    OciError::Key {
        what: what.into(),
        cause,
    }
}

/// The simple-signing payload cosign signs for `digest` in `repository`.
pub(crate) fn payload(docker_reference: &str, digest: &str) -> Vec<u8> {
    let payload = serde_json::json!({
        "critical": {
            "identity": {"docker-reference": docker_reference},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature",
        },
        "optional": null,
    });
    serde_json::to_vec(&payload).expect("json")
}

/// Checks one signature layer: the signature verifies over `payload` with
/// `key`, and the payload names `digest`.
pub(crate) fn check_signature(
    payload: &[u8],
    signature_b64: &str,
    key: &VerifyingKey,
    digest: &str,
) -> Result<(), String> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(signature_b64.trim())
        .map_err(|err| format!("signature annotation is not base64: {err}"))?;
    let signature = Signature::from_der(&raw)
        .or_else(|_| Signature::from_slice(&raw))
        .map_err(|err| format!("signature is not an ECDSA P-256 signature: {err}"))?;
    // Go's crypto/ecdsa may produce a high S; both forms are valid ECDSA.
    let signature = signature.normalize_s().unwrap_or(signature);
    key.verify(payload, &signature)
        .map_err(|_| "signature does not verify with the key".to_string())?;
    let value: serde_json::Value = serde_json::from_slice(payload)
        .map_err(|err| format!("signed payload is not JSON: {err}"))?;
    let signed = value
        .pointer("/critical/image/docker-manifest-digest")
        .and_then(|v| v.as_str());
    match signed {
        Some(signed) if signed == digest => Ok(()),
        Some(signed) => Err(format!(
            "signature is valid but for manifest {signed}, not {digest}"
        )),
        None => Err("signed payload has no critical.image.docker-manifest-digest".into()),
    }
}

fn signature_reference(module: &ModuleRef, digest: &str) -> oci_client::Reference {
    let tag = format!("{}.sig", digest.replace(':', "-"));
    oci_client::Reference::with_tag(module.registry().into(), module.repository().into(), tag)
}

/// The manifest digest `module` names: its own, or the tag's resolved.
pub(crate) async fn manifest_digest(
    client: &Client,
    module: &ModuleRef,
) -> Result<String, OciError> {
    match (module.digest(), module.tag()) {
        (Some(digest), _) => Ok(digest.to_string()),
        (None, tag) => {
            let bytes = client
                .session
                .manifest(module, tag.unwrap_or("latest"), "manifest")
                .await?;
            Ok(sha256_digest(&bytes))
        }
    }
}

/// Verifies that a cosign signature of manifest `digest` of `module` verifies
/// with one of `keys`; returns the index of the first key that does. Every
/// read is capped (the signature manifest at 4 MiB, each payload at 64 KiB).
pub(crate) async fn verify_with(
    client: &Client,
    module: &ModuleRef,
    digest: &str,
    keys: &[VerifyingKey],
) -> Result<usize, OciError> {
    let sig_ref = signature_reference(module, digest);
    let tag = sig_ref.tag().unwrap_or_default();
    let sig_tag = format!("{}/{}:{tag}", module.registry(), module.repository());
    let manifest = match client
        .session
        .manifest(module, tag, "signature manifest")
        .await
    {
        Ok(bytes) => parse_manifest(&bytes).map_err(|cause| OciError::BadSignature {
            reference: module.to_string(),
            cause: format!("signature manifest {sig_tag}: {cause}"),
        })?,
        Err(OciError::NotFound { reference, .. }) => {
            return Err(OciError::Unsigned {
                reference,
                cause: format!("no cosign signature at {sig_tag}"),
            });
        }
        Err(other) => return Err(other),
    };
    let mut refusals = Vec::new();
    for layer in manifest
        .layers
        .iter()
        .filter(|l| l.media_type == SIMPLE_SIGNING_MEDIA_TYPE)
    {
        let Some(signature) = layer
            .annotations
            .as_ref()
            .and_then(|a| a.get(SIGNATURE_ANNOTATION))
        else {
            refusals.push(format!(
                "layer {} has no {SIGNATURE_ANNOTATION} annotation",
                layer.digest
            ));
            continue;
        };
        if layer.size < 0 || layer.size as u64 > MAX_SIGNATURE_PAYLOAD_BYTES {
            refusals.push(format!(
                "payload {} is {} bytes, over {MAX_SIGNATURE_PAYLOAD_BYTES}",
                layer.digest, layer.size
            ));
            continue;
        }
        let payload = client
            .session
            .blob(
                module,
                &layer.digest,
                "signature payload",
                MAX_SIGNATURE_PAYLOAD_BYTES,
            )
            .await?;
        for (index, key) in keys.iter().enumerate() {
            match check_signature(&payload, signature, key, digest) {
                Ok(()) => return Ok(index),
                Err(refusal) => refusals.push(refusal),
            }
        }
    }
    if refusals.is_empty() {
        return Err(OciError::Unsigned {
            reference: module.to_string(),
            cause: format!("{sig_tag} holds no {SIMPLE_SIGNING_MEDIA_TYPE} layer"),
        });
    }
    refusals.dedup();
    Err(OciError::BadSignature {
        reference: module.to_string(),
        cause: format!("{sig_tag}: {}", refusals.join("; ")),
    })
}

async fn sign_with(
    client: &Client,
    module: &ModuleRef,
    key: &p256::ecdsa::SigningKey,
) -> Result<String, OciError> {
    let sig_ref = signature_reference(module, "sha256:0");
    client
        .authorize(&sig_ref, oci_client::RegistryOperation::Push)
        .await
        .map_err(|err| registry_error(module, "authorization", err))?;
    let digest = manifest_digest(client, module).await?;
    let sig_ref = signature_reference(module, &digest);
    let docker_reference = format!("{}/{}", module.registry(), module.repository());
    let payload = payload(&docker_reference, &digest);
    let signature: DerSignature = key.sign(&payload);
    let signature_b64 = base64::engine::general_purpose::STANDARD.encode(signature.as_bytes());

    let mut layers: Vec<OciDescriptor> = match client
        .session
        .manifest(
            module,
            sig_ref.tag().unwrap_or_default(),
            "signature manifest",
        )
        .await
    {
        Ok(bytes) => parse_manifest(&bytes).map(|m| m.layers).unwrap_or_default(),
        Err(OciError::NotFound { .. }) => Vec::new(),
        Err(other) => return Err(other),
    };
    let mut payload_blob = Blob::new(SIMPLE_SIGNING_MEDIA_TYPE, payload);
    payload_blob.descriptor.annotations = Some(BTreeMap::from([(
        SIGNATURE_ANNOTATION.to_string(),
        signature_b64,
    )]));
    let already = layers.iter().any(|l| {
        l.digest == payload_blob.descriptor.digest
            && l.annotations == payload_blob.descriptor.annotations
    });
    if !already {
        layers.push(payload_blob.descriptor.clone());
    }
    let config = serde_json::json!({
        "architecture": "",
        "config": {},
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": layers.iter().map(|l| l.digest.clone()).collect::<Vec<_>>()},
    });
    let config = Blob::new(
        oci_client::manifest::IMAGE_CONFIG_MEDIA_TYPE,
        serde_json::to_vec(&config).expect("json"),
    );
    for blob in [&payload_blob, &config] {
        client
            .inner
            .push_blob(&sig_ref, blob.data.clone(), &blob.descriptor.digest)
            .await
            .map_err(|err| registry_error(module, "signature blob upload", err))?;
    }
    let manifest = image_manifest(config.descriptor.clone(), layers, None);
    client
        .inner
        .push_manifest_raw(
            &sig_ref,
            manifest,
            oci_client::manifest::OCI_IMAGE_MEDIA_TYPE
                .parse()
                .expect("header"),
        )
        .await
        .map_err(|err| registry_error(module, "signature manifest upload", err))?;
    Ok(format!(
        "{docker_reference}:{}",
        sig_ref.tag().unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_made_here_verifies_and_names_its_digest() {
        let pair = generate_key();
        let signing = private_key(pair.private_pem.as_bytes()).unwrap();
        let verifying = public_key(pair.public_pem.as_bytes()).unwrap();
        let digest = format!("sha256:{}", "b".repeat(64));
        let payload = payload("r.example.com/pvc", &digest);
        let signature: DerSignature = signing.sign(&payload);
        let b64 = base64::engine::general_purpose::STANDARD.encode(signature.as_bytes());
        check_signature(&payload, &b64, &verifying, &digest).unwrap();
        let other = format!("sha256:{}", "c".repeat(64));
        let err = check_signature(&payload, &b64, &verifying, &other).unwrap_err();
        assert!(err.contains("not sha256:ccc"), "{err}");
        let stranger = public_key(generate_key().public_pem.as_bytes()).unwrap();
        assert!(
            check_signature(&payload, &b64, &stranger, &digest)
                .unwrap_err()
                .contains("does not verify")
        );
    }

    #[test]
    fn the_payload_has_cosigns_key_order() {
        let text = String::from_utf8(payload("r/p", "sha256:00")).unwrap();
        assert_eq!(
            text,
            r#"{"critical":{"identity":{"docker-reference":"r/p"},"image":{"docker-manifest-digest":"sha256:00"},"type":"cosign container image signature"},"optional":null}"#
        );
    }

    #[test]
    fn encrypted_and_foreign_keys_are_refused_with_the_reason() {
        let encrypted = b"-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n";
        assert!(
            private_key(encrypted)
                .unwrap_err()
                .to_string()
                .contains("encrypted keys")
        );
        assert!(
            public_key(b"not a key")
                .unwrap_err()
                .to_string()
                .contains("public key")
        );
    }
}
