//! The on-disk cache: wasm bytes keyed by their sha256, and manifest records
//! keyed by manifest digest pointing at them.
