//! The artifact layouts a module may travel in, and the manifest [`crate::push`] writes.

/// The CNCF Wasm OCI artifact config media type.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The CNCF Wasm OCI artifact layer media type.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The older layer media type of wasm-to-oci and Kubewarden.
pub const LEGACY_WASM_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// Layer media types accepted on pull.
pub const ACCEPTED_LAYER_MEDIA_TYPES: [&str; 2] = [WASM_LAYER_MEDIA_TYPE, LEGACY_WASM_LAYER_MEDIA_TYPE];
