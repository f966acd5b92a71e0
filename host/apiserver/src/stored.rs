//! Objects as the store keeps them: their compact JSON text, shared (not copied) between
//! the current object and the watch history. A `serde_json::Value` tree costs several times
//! its text (a map node per object, a heap string per key); the text is what every read
//! serializes to anyway, so a watch event can go out without being parsed again.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

/// One stored version of an object: compact JSON, cheap to clone.
#[derive(Clone, PartialEq, Eq)]
pub struct Stored(Arc<[u8]>);

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

impl Stored {
    pub fn encode(value: &Value) -> Self {
        Stored(
            serde_json::to_vec(value)
                .expect("a JSON value serializes")
                .into(),
        )
    }

    /// The object as a JSON value.
    pub fn decode(&self) -> Value {
        serde_json::from_slice(&self.0).expect("stored objects are JSON the store wrote")
    }

    /// The compact JSON text.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The uid and owner uids, read without building the whole object.
    pub fn ownership(&self) -> Ownership {
        serde_json::from_slice::<OwnershipDoc>(&self.0)
            .map(|doc| doc.metadata.into())
            .unwrap_or_default()
    }
}

/// What the owner index needs of an object: its uid and the uids its ownerReferences name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Ownership {
    pub uid: String,
    /// Sorted, without duplicates.
    pub owners: Vec<String>,
}

impl Ownership {
    pub fn of(obj: &Value) -> Self {
        let meta = crate::meta::metadata(obj);
        let text = |v: &Value| v.as_str().unwrap_or("").to_string();
        OwnershipMeta {
            uid: meta
                .and_then(|m| m.get("uid"))
                .map(text)
                .unwrap_or_default(),
            owner_references: crate::meta::owner_references(obj)
                .iter()
                .map(|r| OwnerRef {
                    uid: r.get("uid").map(text).unwrap_or_default(),
                })
                .collect(),
        }
        .into()
    }
}

#[derive(Deserialize, Default)]
struct OwnershipDoc {
    #[serde(default)]
    metadata: OwnershipMeta,
}

#[derive(Deserialize, Default)]
struct OwnershipMeta {
    #[serde(default)]
    uid: String,
    #[serde(default, rename = "ownerReferences")]
    owner_references: Vec<OwnerRef>,
}

#[derive(Deserialize)]
struct OwnerRef {
    #[serde(default)]
    uid: String,
}

impl From<OwnershipMeta> for Ownership {
    fn from(meta: OwnershipMeta) -> Self {
        let mut owners: Vec<String> = meta
            .owner_references
            .into_iter()
            .map(|r| r.uid)
            .filter(|uid| !uid.is_empty())
            .collect();
        owners.sort();
        owners.dedup();
        Ownership {
            uid: meta.uid,
            owners,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_round_trips_and_its_ownership_reads_without_decoding() {
        let obj = json!({"metadata": {"name": "a", "uid": "u1", "ownerReferences": [
            {"uid": "o2", "kind": "Pod"}, {"uid": "o1"}, {"uid": "o2"}]},
            "spec": {"n": 1.5, "big": u64::MAX, "neg": -3}});
        let stored = Stored::encode(&obj);
        assert_eq!(stored.decode(), obj);
        let expected = Ownership {
            uid: "u1".into(),
            owners: vec!["o1".into(), "o2".into()],
        };
        assert_eq!(stored.ownership(), expected);
        assert_eq!(Ownership::of(&obj), expected);
        assert!(stored.len() < 200, "{}", stored.len());
    }
}
