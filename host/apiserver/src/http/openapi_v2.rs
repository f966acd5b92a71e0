//! `/openapi/v2`: the Swagger 2.0 document kubectl reads for client-side validation, which it
//! falls back to for objects the OpenAPI v3 documents do not describe (a `kind: List` that
//! `kubectl apply -f` reads, as `kubectl get -o yaml` prints it). Served as JSON and, when
//! asked for (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, what client-go
//! sends), as the gnostic `openapi.v2.Document` protobuf message.
//!
//! The document has no definitions: kubectl then finds no schema for a kind and skips its
//! client-side check, and the server's own validation (schemas of CRDs included) decides, as
//! it does for every other request. Tags follow gnostic's `openapiv2/OpenAPIv2.proto`.

use prost::Message;
use serde_json::{Value, json};

/// The media type of the protobuf form.
pub const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

const TITLE: &str = "Kubernetes (rekon embedded)";
const VERSION: &str = "v1.35.0";

/// `openapi.v2.Document` (only the fields this server sets).
#[derive(Clone, PartialEq, Message)]
struct Document {
    #[prost(string, tag = "1")]
    swagger: String,
    #[prost(message, optional, tag = "2")]
    info: Option<Info>,
    #[prost(message, optional, tag = "8")]
    paths: Option<Paths>,
}

/// `openapi.v2.Info`.
#[derive(Clone, PartialEq, Message)]
struct Info {
    #[prost(string, tag = "1")]
    title: String,
    #[prost(string, tag = "2")]
    version: String,
}

/// `openapi.v2.Paths` (empty).
#[derive(Clone, PartialEq, Message)]
struct Paths {}

/// Whether the Accept header asks for the protobuf form.
pub fn wants_protobuf(accept: &str) -> bool {
    accept
        .split(',')
        .any(|media| media.trim().starts_with(PROTOBUF))
}

/// The document as JSON.
pub fn json() -> Value {
    json!({
        "swagger": "2.0",
        "info": {"title": TITLE, "version": VERSION},
        "paths": {},
        "definitions": {},
    })
}

/// The document as protobuf.
pub fn protobuf() -> Vec<u8> {
    Document {
        swagger: "2.0".into(),
        info: Some(Info {
            title: TITLE.into(),
            version: VERSION.into(),
        }),
        paths: Some(Paths {}),
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protobuf_document_decodes_as_swagger_2() {
        let decoded = Document::decode(protobuf().as_slice()).unwrap();
        assert_eq!(decoded.swagger, "2.0");
        assert_eq!(decoded.info.unwrap().title, TITLE);
        assert!(wants_protobuf(&format!("{PROTOBUF}, application/json")));
        assert!(!wants_protobuf("application/json"));
        assert_eq!(json()["swagger"], "2.0");
    }
}
