//! `namespace/name`: the key of a namespaced object in caches and work queues.

use std::fmt;

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of an object from its metadata.
    pub fn of(meta: &rekon_guest::model::ObjectMeta) -> Self {
        Self::new(meta.namespace.as_str(), meta.name.as_str())
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // client-go's MetaNamespaceKeyFunc: a cluster-scoped object's key is its name.
        if self.namespace.is_empty() {
            return f.write_str(&self.name);
        }
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_as_namespace_slash_name() {
        let key = ObjectKey::new("ns", "name");
        assert_eq!(key.to_string(), "ns/name");
        assert_eq!(format!("{key:?}"), "ns/name");
    }
}
