//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`), as typed
//! clientsets send them (`kubectl create namespace`, `kubectl create configmap`): the envelope
//! (magic `k8s\0`, then a `runtime.Unknown` holding the type and the raw object) and the object
//! messages of the served kinds those generators create, decoded into the JSON object the JSON
//! path receives. Tags follow upstream's `generated.proto`; fields a generator never sets
//! (managedFields, status conditions) are not decoded.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use prost::Message;
use serde::{Serialize, Serializer};
use serde_json::Value;

const MAGIC: &[u8] = b"k8s\0";

#[derive(Debug, thiserror::Error)]
pub enum ProtobufError {
    #[error("the protobuf body does not start with the k8s magic prefix")]
    NoMagic,
    #[error("invalid protobuf envelope: {0}")]
    Envelope(prost::DecodeError),
    #[error("protobuf body with content encoding {0:?} is not supported")]
    Encoding(String),
    #[error("invalid protobuf {kind}: {source}")]
    Object {
        kind: String,
        source: prost::DecodeError,
    },
    /// The server decodes only the kinds kubectl's generators create.
    #[error(
        "the rekon embedded API server does not decode {api_version} {kind} from protobuf (only v1 Namespace and v1 ConfigMap); send it as JSON or YAML"
    )]
    UnsupportedKind { api_version: String, kind: String },
}

/// The object in the body as JSON, with `apiVersion` and `kind` from the envelope.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let envelope = body.strip_prefix(MAGIC).ok_or(ProtobufError::NoMagic)?;
    let unknown = Unknown::decode(envelope).map_err(ProtobufError::Envelope)?;
    if !unknown.content_encoding.is_empty() {
        return Err(ProtobufError::Encoding(unknown.content_encoding));
    }
    let TypeMeta { api_version, kind } = unknown.type_meta.unwrap_or_default();
    let raw = unknown.raw.as_slice();
    let object = match (api_version.as_str(), kind.as_str()) {
        ("v1", "Namespace") => to_json::<Namespace>(raw, &kind)?,
        ("v1", "ConfigMap") => to_json::<ConfigMap>(raw, &kind)?,
        _ => return Err(ProtobufError::UnsupportedKind { api_version, kind }),
    };
    let mut object = object;
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(api_version));
        map.insert("kind".into(), Value::String(kind));
    }
    Ok(object)
}

fn to_json<M: Message + Default + Serialize>(
    raw: &[u8],
    kind: &str,
) -> Result<Value, ProtobufError> {
    let message = M::decode(raw).map_err(|source| ProtobufError::Object {
        kind: kind.to_string(),
        source,
    })?;
    Ok(serde_json::to_value(message).expect("decoded messages serialise"))
}

/// `runtime.Unknown`.
#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", tag = "2")]
    raw: Vec<u8>,
    #[prost(string, tag = "3")]
    content_encoding: String,
    #[prost(string, tag = "4")]
    content_type: String,
}

/// `runtime.TypeMeta`.
#[derive(Clone, PartialEq, Message)]
struct TypeMeta {
    #[prost(string, tag = "1")]
    api_version: String,
    #[prost(string, tag = "2")]
    kind: String,
}

/// `metav1.Time`: zero is "not set", as in Go.
#[derive(Clone, PartialEq, Message)]
struct Time {
    #[prost(int64, tag = "1")]
    seconds: i64,
    #[prost(int32, tag = "2")]
    nanos: i32,
}

fn unset_time(time: &Option<Time>) -> bool {
    time.as_ref().is_none_or(|t| t.seconds == 0 && t.nanos == 0)
}

fn rfc3339<S: Serializer>(time: &Option<Time>, serializer: S) -> Result<S::Ok, S::Error> {
    let seconds = time.as_ref().map_or(0, |t| t.seconds);
    match chrono::DateTime::from_timestamp(seconds, 0) {
        Some(at) => serializer.serialize_str(&crate::meta::format_time(at)),
        None => serializer.serialize_none(),
    }
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// `metav1.ObjectMeta`, serialised with Go's `omitempty`.
#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectMeta {
    #[prost(string, tag = "1")]
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    #[prost(string, tag = "2")]
    #[serde(skip_serializing_if = "String::is_empty")]
    generate_name: String,
    #[prost(string, tag = "3")]
    #[serde(skip_serializing_if = "String::is_empty")]
    namespace: String,
    #[prost(string, tag = "5")]
    #[serde(skip_serializing_if = "String::is_empty")]
    uid: String,
    #[prost(string, tag = "6")]
    #[serde(skip_serializing_if = "String::is_empty")]
    resource_version: String,
    #[prost(int64, tag = "7")]
    #[serde(skip_serializing_if = "is_zero")]
    generation: i64,
    #[prost(message, optional, tag = "8")]
    #[serde(skip_serializing_if = "unset_time", serialize_with = "rfc3339")]
    creation_timestamp: Option<Time>,
    #[prost(message, optional, tag = "9")]
    #[serde(skip_serializing_if = "unset_time", serialize_with = "rfc3339")]
    deletion_timestamp: Option<Time>,
    #[prost(int64, optional, tag = "10")]
    #[serde(skip_serializing_if = "Option::is_none")]
    deletion_grace_period_seconds: Option<i64>,
    #[prost(btree_map = "string, string", tag = "11")]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<String, String>,
    #[prost(message, repeated, tag = "13")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    owner_references: Vec<OwnerReference>,
    #[prost(string, repeated, tag = "14")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    finalizers: Vec<String>,
}

/// `metav1.OwnerReference`.
#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
struct OwnerReference {
    #[prost(string, tag = "1")]
    kind: String,
    #[prost(string, tag = "3")]
    name: String,
    #[prost(string, tag = "4")]
    uid: String,
    #[prost(string, tag = "5")]
    api_version: String,
    #[prost(bool, optional, tag = "6")]
    #[serde(skip_serializing_if = "Option::is_none")]
    controller: Option<bool>,
    #[prost(bool, optional, tag = "7")]
    #[serde(skip_serializing_if = "Option::is_none")]
    block_owner_deletion: Option<bool>,
}

/// core/v1 `Namespace` (status conditions are not decoded: the server sets status).
#[derive(Clone, PartialEq, Message, Serialize)]
struct Namespace {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<NamespaceSpec>,
}

#[derive(Clone, PartialEq, Message, Serialize)]
struct NamespaceSpec {
    #[prost(string, repeated, tag = "1")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    finalizers: Vec<String>,
}

/// core/v1 `ConfigMap`.
#[derive(Clone, PartialEq, Message, Serialize)]
#[serde(rename_all = "camelCase")]
struct ConfigMap {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, string", tag = "2")]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    data: BTreeMap<String, String>,
    #[prost(btree_map = "string, bytes", tag = "3")]
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "base64_values"
    )]
    binary_data: BTreeMap<String, Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    #[serde(skip_serializing_if = "Option::is_none")]
    immutable: Option<bool>,
}

/// `binaryData` values as JSON carries them: base64.
fn base64_values<S: Serializer>(
    values: &BTreeMap<String, Vec<u8>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(
        values
            .iter()
            .map(|(key, bytes)| (key, ByteString(bytes.clone()))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: api_version.into(),
                kind: kind.into(),
            }),
            raw,
            content_encoding: String::new(),
            content_type: String::new(),
        };
        [MAGIC.to_vec(), unknown.encode_to_vec()].concat()
    }

    fn meta(name: &str) -> ObjectMeta {
        ObjectMeta {
            name: name.into(),
            creation_timestamp: Some(Time::default()),
            ..Default::default()
        }
    }

    #[test]
    fn config_map_decodes_to_the_json_kubectl_would_send() {
        let cm = ConfigMap {
            metadata: Some(ObjectMeta {
                labels: [("app".to_string(), "x".to_string())].into(),
                ..meta("c")
            }),
            data: [("a".to_string(), "b".to_string()), ("e".into(), "".into())].into(),
            binary_data: [("bin".to_string(), vec![0, 1, 2])].into(),
            immutable: None,
        };
        let decoded = decode(&envelope("v1", "ConfigMap", cm.encode_to_vec())).unwrap();
        assert_eq!(
            decoded,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "labels": {"app": "x"}},
                "data": {"a": "b", "e": ""}, "binaryData": {"bin": "AAEC"}})
        );
    }

    #[test]
    fn namespace_decodes() {
        let ns = Namespace {
            metadata: Some(meta("x")),
            spec: Some(NamespaceSpec::default()),
        };
        let decoded = decode(&envelope("v1", "Namespace", ns.encode_to_vec())).unwrap();
        assert_eq!(
            decoded,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "spec": {}})
        );
    }

    #[test]
    fn bad_bodies_are_named() {
        assert!(matches!(decode(b"{}"), Err(ProtobufError::NoMagic)));
        assert!(matches!(
            decode(b"k8s\0\xff\xff"),
            Err(ProtobufError::Envelope(_))
        ));
        let err = decode(&envelope("v1", "Secret", vec![])).unwrap_err();
        assert!(err.to_string().contains("v1 Secret"), "{err}");
        assert!(matches!(
            decode(&envelope("v1", "ConfigMap", vec![0x0a, 0x05])),
            Err(ProtobufError::Object { .. })
        ));
    }
}
