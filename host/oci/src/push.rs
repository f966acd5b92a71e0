//! Pushing a module in the CNCF Wasm OCI artifact layout.

use crate::error::OciError;
use crate::transport::RegistryOptions;

/// Pushes `wasm` to `reference` (`REGISTRY/REPO[:TAG]`, default tag `latest`)
/// as a CNCF Wasm OCI artifact and returns `REGISTRY/REPO@sha256:<manifest digest>`.
pub async fn push(wasm: &[u8], reference: &str, options: &RegistryOptions) -> Result<String, OciError> {
    let _ = (wasm, reference, options);
    todo!()
}
