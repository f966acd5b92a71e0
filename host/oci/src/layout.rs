//! The artifact layouts a module may travel in: the manifest [`crate::push`]
//! writes, and the wasm layer a pull takes from a manifest.

use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};

/// The CNCF Wasm OCI artifact config media type.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The CNCF Wasm OCI artifact layer media type.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The older layer media type of wasm-to-oci and Kubewarden.
pub const LEGACY_WASM_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// Layer media types accepted on pull.
pub const ACCEPTED_LAYER_MEDIA_TYPES: [&str; 2] = [WASM_LAYER_MEDIA_TYPE, LEGACY_WASM_LAYER_MEDIA_TYPE];
/// Manifest media types asked for on pull.
pub(crate) const MANIFEST_MEDIA_TYPES: [&str; 2] =
    [OCI_IMAGE_MEDIA_TYPE, oci_client::manifest::IMAGE_MANIFEST_MEDIA_TYPE];

/// `sha256:<hex>` of `bytes`.
pub(crate) fn sha256_digest(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// A blob and its descriptor.
pub(crate) struct Blob {
    pub(crate) descriptor: OciDescriptor,
    pub(crate) data: Vec<u8>,
}

impl Blob {
    pub(crate) fn new(media_type: &str, data: Vec<u8>) -> Self {
        let descriptor = OciDescriptor {
            media_type: media_type.to_string(),
            digest: sha256_digest(&data),
            size: data.len() as i64,
            ..Default::default()
        };
        Self { descriptor, data }
    }
}

/// The CNCF Wasm artifact for `wasm`: its config blob and its manifest bytes.
/// The same bytes always give the same manifest (no timestamps), so pushing a
/// module twice gives one digest.
pub(crate) fn wasm_artifact(wasm_layer: &OciDescriptor) -> (Blob, Vec<u8>) {
    let config = serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [wasm_layer.digest],
    });
    let config = Blob::new(WASM_CONFIG_MEDIA_TYPE, serde_json::to_vec(&config).expect("json"));
    let manifest = image_manifest(config.descriptor.clone(), vec![wasm_layer.clone()], None);
    (config, manifest)
}

/// An OCI image manifest as bytes.
pub(crate) fn image_manifest(config: OciDescriptor, layers: Vec<OciDescriptor>, artifact_type: Option<&str>) -> Vec<u8> {
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_string()),
        config,
        layers,
        subject: None,
        artifact_type: artifact_type.map(str::to_string),
        annotations: None,
    };
    serde_json::to_vec(&manifest).expect("a manifest serializes")
}

/// The single wasm layer of `manifest`, or why there is none.
pub(crate) fn wasm_layer(manifest: &OciImageManifest) -> Result<&OciDescriptor, String> {
    match manifest.layers.as_slice() {
        [layer] if ACCEPTED_LAYER_MEDIA_TYPES.contains(&layer.media_type.as_str()) => Ok(layer),
        layers => {
            let types: Vec<&str> = layers.iter().map(|l| l.media_type.as_str()).collect();
            Err(format!(
                "expected one layer of media type {} or {}, found {} layer(s) [{}] (config {})",
                WASM_LAYER_MEDIA_TYPE,
                LEGACY_WASM_LAYER_MEDIA_TYPE,
                layers.len(),
                types.join(", "),
                manifest.config.media_type
            ))
        }
    }
}

/// Parses manifest bytes; an index or a schema-1 manifest is refused.
pub(crate) fn parse_manifest(bytes: &[u8]) -> Result<OciImageManifest, String> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|err| format!("manifest is not JSON: {err}"))?;
    if value.get("manifests").is_some() {
        return Err("it is an image index (several manifests), not a single wasm artifact".into());
    }
    serde_json::from_value(value).map_err(|err| format!("manifest does not parse: {err}"))
}
