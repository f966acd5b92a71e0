//! The resource table: every kind the server serves and how the verbs treat it. The
//! built-in kinds come from k8s-openapi's types ([`builtin`]); custom resources are interned
//! from CustomResourceDefinitions ([`custom`]).

mod builtin;

use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use std::sync::{LazyLock, RwLock};

use k8s_openapi::api::core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Turns a request body into the stored form by a round trip through the k8s-openapi type:
/// a body of the wrong shape is rejected with the path of the bad field, and fields the type
/// does not know are dropped, as the real server prunes them for built-in kinds.
pub type Normalize = fn(Value) -> Result<Value, String>;

fn normalize<K: DeserializeOwned + Serialize>(value: Value) -> Result<Value, String> {
    let typed: K = serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        if path == "." || path.is_empty() {
            err.inner().to_string()
        } else {
            format!("{path}: {}", err.inner())
        }
    })?;
    serde_json::to_value(typed).map_err(|err| err.to_string())
}

/// Custom resources carry any fields; only `metadata` has a fixed type. Their schema is the
/// CRD's, applied by `crd::admission` where the store is at hand.
fn normalize_custom(mut value: Value) -> Result<Value, String> {
    if let Some(metadata) = value.get_mut("metadata") {
        let typed: ObjectMeta = serde_path_to_error::deserialize(metadata.take())
            .map_err(|err| format!("metadata.{}: {}", err.path(), err.inner()))?;
        *metadata = serde_json::to_value(typed).map_err(|err| err.to_string())?;
    }
    Ok(value)
}

/// How the verbs treat one resource.
#[derive(Debug)]
pub struct ResourceInfo {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub list_kind: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub short_names: &'static [&'static str],
    /// Discovery categories (`kubectl get all` reads `all`).
    pub categories: &'static [&'static str],
    /// Discovery verbs of the main resource.
    pub verbs: &'static [&'static str],
    pub namespaced: bool,
    /// Has a `/status` subresource: main writes keep status, status writes keep spec.
    pub has_status: bool,
    /// What a write to `/status` may change besides status.
    pub status_write: StatusWrite,
    /// Has a `/scale` subresource (an autoscaling/v1 Scale of `spec.replicas`).
    pub has_scale: bool,
    /// Deleted gracefully (pods): `deletionTimestamp = now + grace` instead of removal.
    pub graceful: bool,
    /// The server owns `metadata.generation` (1 on create, +1 on spec change).
    pub manages_generation: bool,
    /// A completed delete answers with the object instead of a `Status` (upstream
    /// `ReturnDeletedObject`).
    pub returns_deleted_object: bool,
    /// A delete without a propagation policy orphans the dependents (upstream
    /// `DefaultGarbageCollectionPolicy` of batch/v1 Jobs and ReplicationControllers).
    pub orphans_by_default: bool,
    /// Field selector labels beyond `metadata.name`/`metadata.namespace`, with the JSON pointer
    /// of the value they select on.
    pub selectable_fields: &'static [(&'static str, &'static str)],
    pub normalize: Normalize,
    /// Stored as the resource of the same plural in this group (see `conversion`).
    pub storage_group: Option<&'static str>,
    /// Served from a CustomResourceDefinition (see [`custom`]): schema, printer columns and
    /// short names live with the store that serves it.
    pub custom: bool,
}

impl ResourceInfo {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `pods` or `leases.coordination.k8s.io`, as upstream names a GroupResource.
    pub fn qualified(&self) -> String {
        qualify(self.plural, self.group)
    }

    /// `Pod` or `ResourceClaim.resource.k8s.io`, used where upstream names the Kind.
    pub fn qualified_kind(&self) -> String {
        qualify(self.kind, self.group)
    }

    pub fn list_kind(&self) -> &'static str {
        self.list_kind
    }
}

/// What a write to `/status` may change besides status. v1.20's strategies (observed on the
/// real server) keep label and annotation changes, deployments all but labels; kinds added
/// since reset all metadata (upstream `ResetObjectMetaForStatus`), as custom resources do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusWrite {
    WithMetadata,
    WithAnnotations,
    StatusOnly,
}

pub(crate) fn qualify(name: &str, group: &str) -> String {
    if group.is_empty() {
        name.to_string()
    } else {
        format!("{name}.{group}")
    }
}

const BASE: ResourceInfo = ResourceInfo {
    group: "",
    version: "v1",
    kind: "",
    list_kind: "",
    plural: "",
    singular: "",
    short_names: &[],
    categories: &[],
    verbs: builtin::VERBS,
    namespaced: true,
    has_status: false,
    status_write: StatusWrite::WithMetadata,
    has_scale: false,
    graceful: false,
    manages_generation: false,
    returns_deleted_object: false,
    orphans_by_default: false,
    selectable_fields: &[],
    normalize: normalize::<core::v1::ConfigMap>,
    storage_group: None,
    custom: false,
};

/// Every built-in resource, in discovery order (see [`builtin`]).
static RESOURCES: LazyLock<Vec<ResourceInfo>> = LazyLock::new(builtin::table);

/// Index of a served resource: in the built-in table, or past its end in [`custom`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId(usize);

impl ResourceId {
    /// The resource whose storage this one shares (itself for most).
    pub fn storage(self) -> ResourceId {
        if let Some(entry) = custom::entry(self) {
            return entry.storage;
        }
        let info = self.info();
        info.storage_group
            .and_then(|group| by_plural(group, info.plural))
            .unwrap_or(self)
    }

    pub fn info(self) -> &'static ResourceInfo {
        match RESOURCES.get(self.0) {
            Some(info) => info,
            None => {
                custom::entry(self)
                    .expect("resource ids come from a table")
                    .info
            }
        }
    }
}

/// The resources CustomResourceDefinitions describe, interned for the whole process: one
/// entry per (group, version, kind, plural, singular, scope, status subresource), so ids stay
/// `Copy` and `info()` stays `&'static` however many servers run. Which of them a server
/// serves, and with which schema, is the server's own (`crd::CustomResources`). Versions of
/// one (group, plural, scope) share the storage of the first one interned, so a CRD that adds
/// a version or the status subresource keeps its objects.
pub mod custom {
    use super::*;

    /// What identifies a custom resource.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct Identity {
        pub group: String,
        pub version: String,
        pub kind: String,
        pub plural: String,
        pub singular: String,
        pub namespaced: bool,
        pub has_status: bool,
    }

    pub(super) struct Entry {
        pub(super) info: &'static ResourceInfo,
        pub(super) storage: ResourceId,
        identity: Identity,
    }

    static TABLE: LazyLock<RwLock<Vec<Entry>>> = LazyLock::new(|| RwLock::new(Vec::new()));

    pub(super) fn entry(id: ResourceId) -> Option<EntryRef> {
        let index = id.0.checked_sub(RESOURCES.len())?;
        let table = TABLE.read().unwrap_or_else(|p| p.into_inner());
        table.get(index).map(|e| EntryRef {
            info: e.info,
            storage: e.storage,
        })
    }

    pub(super) struct EntryRef {
        pub(super) info: &'static ResourceInfo,
        pub(super) storage: ResourceId,
    }

    fn leak(text: &str) -> &'static str {
        Box::leak(text.to_string().into_boxed_str())
    }

    /// The id of the resource `identity` names, interned on first use.
    pub fn intern(identity: &Identity) -> ResourceId {
        let mut table = TABLE.write().unwrap_or_else(|p| p.into_inner());
        if let Some(index) = table.iter().position(|e| &e.identity == identity) {
            return ResourceId(RESOURCES.len() + index);
        }
        let id = ResourceId(RESOURCES.len() + table.len());
        let storage = table
            .iter()
            .find(|e| {
                e.identity.group == identity.group
                    && e.identity.plural == identity.plural
                    && e.identity.namespaced == identity.namespaced
            })
            .map_or(id, |e| e.storage);
        let info: &'static ResourceInfo = Box::leak(Box::new(ResourceInfo {
            group: leak(&identity.group),
            version: leak(&identity.version),
            kind: leak(&identity.kind),
            list_kind: leak(&format!("{}List", identity.kind)),
            plural: leak(&identity.plural),
            singular: leak(&identity.singular),
            namespaced: identity.namespaced,
            has_status: identity.has_status,
            status_write: StatusWrite::StatusOnly,
            manages_generation: true,
            normalize: normalize_custom,
            custom: true,
            ..BASE
        }));
        table.push(Entry {
            info,
            storage,
            identity: identity.clone(),
        });
        id
    }
}

/// The built-in resources.
pub fn all() -> impl Iterator<Item = ResourceId> {
    (0..RESOURCES.len()).map(ResourceId)
}

pub fn by_plural(group: &str, plural: &str) -> Option<ResourceId> {
    all().find(|id| id.info().group == group && id.info().plural == plural)
}

pub fn by_group_version_plural(group: &str, version: &str, plural: &str) -> Option<ResourceId> {
    by_plural(group, plural).filter(|id| id.info().version == version)
}

pub fn by_kind(api_version: &str, kind: &str) -> Option<ResourceId> {
    all().find(|id| id.info().kind == kind && id.info().api_version() == api_version)
}

/// Group versions served, in discovery order (the core group first).
pub fn group_versions() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for id in all() {
        let gv = (id.info().group, id.info().version);
        if !out.contains(&gv) {
            out.push(gv);
        }
    }
    out
}

pub const NAMESPACES: &str = "namespaces";

pub fn namespaces() -> ResourceId {
    by_plural("", NAMESPACES).expect("namespaces are in the table")
}

pub fn pods() -> ResourceId {
    by_plural("", "pods").expect("pods are in the table")
}

pub fn persistent_volume_claims() -> ResourceId {
    by_plural("", "persistentvolumeclaims").expect("PVCs are in the table")
}

pub fn custom_resource_definitions() -> ResourceId {
    by_plural("apiextensions.k8s.io", "customresourcedefinitions").expect("CRDs are in the table")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalize_prunes_unknown_fields_and_names_bad_ones() {
        let info = pods().info();
        let out = (info.normalize)(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c"}], "bogus": 1}
        }))
        .unwrap();
        assert!(out["spec"].get("bogus").is_none());
        let err = (info.normalize)(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": 5}]}
        }))
        .unwrap_err();
        assert!(err.starts_with("spec.containers[0].name"), "{err}");
    }

    #[test]
    fn lookups_agree() {
        let lease = by_kind("coordination.k8s.io/v1", "Lease").unwrap();
        assert_eq!(by_plural("coordination.k8s.io", "leases"), Some(lease));
        assert_ne!(by_kind("v1", "Event"), by_kind("events.k8s.io/v1", "Event"));
        assert_eq!(group_versions()[0], ("", "v1"));
    }
}
