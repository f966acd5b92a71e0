//! Pushing a module in the CNCF Wasm OCI artifact layout.

use crate::error::OciError;
use crate::layout::{Blob, WASM_LAYER_MEDIA_TYPE, sha256_digest, wasm_artifact};
use crate::reference::ModuleRef;
use crate::transport::{RegistryOptions, Transport, registry_error};

/// Pushes `wasm` to `reference` (`REGISTRY/REPO[:TAG]`, default tag `latest`)
/// as a CNCF Wasm OCI artifact and returns `REGISTRY/REPO@sha256:<manifest digest>`.
/// The manifest carries no timestamp, so the same bytes always get the same digest.
pub async fn push(wasm: &[u8], reference: &str, options: &RegistryOptions) -> Result<String, OciError> {
    let module = ModuleRef::parse(reference)?;
    if module.digest().is_some() {
        return Err(OciError::InvalidReference {
            reference: reference.into(),
            reason: "push to a tag (`REGISTRY/REPO:TAG`), not a digest; the digest is what push prints".into(),
        });
    }
    if !wasm.starts_with(b"\0asm") {
        return Err(OciError::NotWasm { reference: reference.into(), reason: "the file does not start with the wasm magic bytes".into() });
    }
    let layer = Blob::new(WASM_LAYER_MEDIA_TYPE, wasm.to_vec());
    let (config, manifest) = wasm_artifact(&layer.descriptor);
    let manifest_digest = sha256_digest(&manifest);
    let transport = Transport::from_options(options)?;
    transport
        .run(&module, options.insecure, options.auth.as_ref(), async |client| {
            client
                .authorize(module.oci(), oci_client::RegistryOperation::Push)
                .await
                .map_err(|err| registry_error(&module, "authorization", err))?;
            for blob in [&layer, &config] {
                let exists = client.inner.blob_exists(module.oci(), &blob.descriptor.digest).await.unwrap_or(false);
                if !exists {
                    client
                        .inner
                        .push_blob(module.oci(), blob.data.clone(), &blob.descriptor.digest)
                        .await
                        .map_err(|err| registry_error(&module, "blob upload", err))?;
                }
            }
            client
                .inner
                .push_manifest_raw(module.oci(), manifest.clone(), oci_client::manifest::OCI_IMAGE_MEDIA_TYPE.parse().expect("header"))
                .await
                .map_err(|err| registry_error(&module, "manifest upload", err))?;
            Ok(())
        })
        .await?;
    Ok(module.with_digest(&manifest_digest))
}
