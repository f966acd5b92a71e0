//! The API verbs (create/update/patch/delete/get/list, the scale subresource) on top of the
//! object storage: what upstream calls the registry, shared by the HTTP layer and the
//! in-process cluster behaviours.
//!
//! Every operation runs under one lock, so each request is atomic, like an etcd transaction.

mod create;
mod delete;
pub mod prepare;
mod read;
mod scale;
mod update;

use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::watch;

pub use delete::{DeleteOutcome, FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
pub use read::ListOptions;

use crate::crd::{self, CustomResources};
use crate::errors::ApiError;
use crate::meta;
use crate::patch::{self, PatchType, apply::ApplyRequest};
use crate::resources::{self, ResourceId};
use crate::store::{HistoryLimits, ObjectKey, Objects, TooOld, WatchEvent};

/// Errors of the in-process store API (seeding).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("object #{index} has no known apiVersion/kind ({api_version}/{kind})")]
    UnknownKind {
        index: usize,
        api_version: String,
        kind: String,
    },
    #[error("object #{index} ({kind} {name:?}) is invalid: {message}")]
    InvalidObject {
        index: usize,
        kind: String,
        name: String,
        message: String,
    },
}

/// Behaviour of the verbs that the server configuration decides.
#[derive(Debug, Clone)]
pub struct StoreSettings {
    pub history: HistoryLimits,
    pub seed: u64,
    /// `StorageObjectInUseProtection` admission: PVCs get `kubernetes.io/pvc-protection` on create.
    pub pvc_protection_admission: bool,
}

pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";

/// Which object a write addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub resource: ResourceId,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
    /// The `/status` subresource.
    pub status: bool,
}

impl Target {
    pub fn new(resource: ResourceId, namespace: &str, name: &str) -> Self {
        Target {
            resource,
            namespace: namespace.to_string(),
            name: name.to_string(),
            status: false,
        }
    }

    pub fn status(mut self) -> Self {
        self.status = true;
        self
    }

    pub(crate) fn key(&self) -> ObjectKey {
        ObjectKey::new(self.resource, &self.namespace, &self.name)
    }

    fn subresource(&self) -> Option<&'static str> {
        self.status.then_some("status")
    }
}

/// Options of create, update and patch.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// The `fieldManager` parameter.
    pub field_manager: Option<String>,
    /// Manager when no `fieldManager` is sent (upstream derives it from the User-Agent).
    /// Ownership is recorded whenever one of the two is set (always over HTTP).
    pub default_manager: Option<String>,
    /// `force` of server-side apply.
    pub force: bool,
}

impl WriteOptions {
    pub fn manager(manager: &str) -> Self {
        WriteOptions {
            field_manager: Some(manager.to_string()),
            ..Default::default()
        }
    }

    /// The manager to record ownership for; objects that already track ownership are never
    /// written without one.
    fn manager_for(&self, obj: &Value) -> Option<&str> {
        let tracking = meta::metadata(obj).is_some_and(|m| m.contains_key("managedFields"));
        self.field_manager
            .as_deref()
            .or(self.default_manager.as_deref())
            .or(if tracking { Some("unknown") } else { None })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum PropagationPolicy {
    Orphan,
    Background,
    Foreground,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// `metav1.DeleteOptions` (body or query parameters).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub preconditions: Option<Preconditions>,
    pub propagation_policy: Option<PropagationPolicy>,
    pub orphan_dependents: Option<bool>,
    /// Present to be refused: dry runs are not supported.
    pub dry_run: Option<Vec<String>>,
}

impl DeleteOptions {
    pub fn with_preconditions(uid: Option<&str>, resource_version: Option<&str>) -> Self {
        DeleteOptions {
            preconditions: Some(Preconditions {
                uid: uid.map(str::to_string),
                resource_version: resource_version.map(str::to_string),
            }),
            ..Default::default()
        }
    }
}

/// Result of a PATCH: server-side apply may create the object.
#[derive(Debug, Clone)]
pub struct PatchOutcome {
    pub object: Value,
    pub created: bool,
}

struct Shared {
    objects: Mutex<Objects>,
    changes: watch::Sender<u64>,
    /// Separate streams so generated names depend only on the seed and the number of names
    /// generated before (tests provoke collisions with them).
    name_rng: Mutex<ChaCha8Rng>,
    uid_rng: Mutex<ChaCha8Rng>,
    settings: StoreSettings,
    /// What the stored CRDs serve, rebuilt after every write that touches one.
    custom: RwLock<Arc<CustomResources>>,
}

/// In-process handle on the server's objects (cheap to clone). The HTTP layer, the cluster
/// behaviours and tests all go through it.
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
}

/// Namespaces a fresh cluster has.
const INITIAL_NAMESPACES: &[&str] = &["default", "kube-node-lease", "kube-public", "kube-system"];

fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

impl Store {
    pub fn new(settings: StoreSettings) -> Self {
        let (changes, _) = watch::channel(0);
        let store = Store {
            shared: Arc::new(Shared {
                objects: Mutex::new(Objects::new(settings.history)),
                changes,
                name_rng: Mutex::new(ChaCha8Rng::seed_from_u64(settings.seed)),
                uid_rng: Mutex::new(ChaCha8Rng::seed_from_u64(settings.seed ^ 0x005e_ed0f_01d5)),
                settings,
                custom: RwLock::new(Arc::default()),
            }),
        };
        for ns in INITIAL_NAMESPACES {
            store
                .create(
                    resources::namespaces(),
                    "",
                    json!({"metadata": {"name": ns}}),
                    &WriteOptions::default(),
                )
                .expect("initial namespaces are valid");
        }
        // As on any used etcd, the bootstrap writes are already out of the watch window:
        // a watch from resourceVersion 1 gets the 410.
        store.compact();
        store
    }

    fn lock(&self) -> MutexGuard<'_, Objects> {
        self.shared
            .objects
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `f` under the lock and wakes watchers if it wrote.
    fn write<R>(&self, f: impl FnOnce(&mut Objects, &Store) -> R) -> R {
        let mut objects = self.lock();
        let before = objects.current_rv();
        let result = f(&mut objects, self);
        if objects.current_rv() != before && self.touched_crds(&objects, before) {
            self.converge_crds(&mut objects);
        }
        let after = objects.current_rv();
        drop(objects);
        if after != before {
            self.shared.changes.send_replace(after);
        }
        result
    }

    /// Whether the writes after `before` include a CRD (true when the history no longer
    /// tells).
    fn touched_crds(&self, objects: &Objects, before: u64) -> bool {
        let crds = resources::custom_resource_definitions();
        objects
            .events_since(before)
            .map_or(true, |events| events.iter().any(|e| e.key.resource == crds))
    }

    /// Upstream's naming and establishing controllers, in the same transaction: each CRD's
    /// status gets its accepted names and conditions; then the served table is rebuilt.
    fn converge_crds(&self, objects: &mut Objects) {
        let crds = resources::custom_resource_definitions();
        let now = meta::format_time(now());
        let stale: Vec<(ObjectKey, Value)> = objects
            .iter_resource(crds, None)
            .filter_map(|(key, crd)| {
                let status = crd::definition::converged_status(&crd, &now)?;
                let mut crd = crd;
                crd["status"] = status;
                Some((key, crd))
            })
            .collect();
        for (key, crd) in stale {
            objects.put(key, crd);
        }
        let stored: Vec<Value> = objects.iter_resource(crds, None).map(|(_, v)| v).collect();
        let table = Arc::new(CustomResources::from_stored(stored.iter()));
        *self
            .shared
            .custom
            .write()
            .unwrap_or_else(|p| p.into_inner()) = table;
    }

    /// The custom resources this server serves now.
    pub fn custom_resources(&self) -> Arc<CustomResources> {
        self.shared
            .custom
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn settings(&self) -> &StoreSettings {
        &self.shared.settings
    }

    pub(crate) fn random_name(&self, prefix: &str) -> String {
        let mut rng = self
            .shared
            .name_rng
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        crate::names::generate_name(prefix, &mut *rng)
    }

    pub(crate) fn random_uid(&self) -> String {
        use rand::Rng;
        let mut rng = self
            .shared
            .uid_rng
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut bytes: [u8; 16] = rng.random();
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
    }

    pub fn current_resource_version(&self) -> u64 {
        self.lock().current_rv()
    }

    /// Drops the watch history: a watch from an older resourceVersion gets the in-stream 410,
    /// a continue token from before gets 410.
    pub fn compact(&self) {
        self.lock().compact();
    }

    /// Serialized bytes the watch history holds (bounded by `ServerConfig::history_bytes`).
    pub fn history_bytes(&self) -> usize {
        self.lock().history_bytes()
    }

    /// Notified with the newest resourceVersion after every write.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    pub fn events_since(&self, rv: u64) -> Result<Vec<Arc<WatchEvent>>, TooOld> {
        self.lock().events_since(rv)
    }

    /// Waits until the store has reached `rv`; false after `timeout`.
    pub async fn wait_for_resource_version(&self, rv: u64, timeout: Duration) -> bool {
        let mut changes = self.subscribe();
        let reached =
            tokio::time::timeout(timeout, changes.wait_for(|current| *current >= rv)).await;
        matches!(reached, Ok(Ok(_))) || self.current_resource_version() >= rv
    }

    /// Reads under the lock (watch snapshots, cluster scans).
    pub fn read<R>(&self, f: impl FnOnce(&Objects) -> R) -> R {
        f(&self.lock())
    }

    /// All objects, sorted by (apiVersion, kind, namespace, name).
    pub fn snapshot(&self) -> Vec<Value> {
        let mut all: Vec<(String, &str, String, String, Value)> = self.read(|objs| {
            objs.iter_all()
                .map(|(key, obj)| {
                    let info = key.resource.info();
                    (
                        info.api_version(),
                        info.kind,
                        key.namespace.clone(),
                        key.name.clone(),
                        obj.decode(),
                    )
                })
                .collect()
        });
        all.sort_by(|a, b| (&a.0, a.1, &a.2, &a.3).cmp(&(&b.0, b.1, &b.2, &b.3)));
        all.into_iter().map(|entry| entry.4).collect()
    }

    /// Seeds objects as given (uid, finalizers, deletionTimestamp, ownerReferences and status
    /// are kept; missing uid/creationTimestamp are filled). Missing namespaces are created.
    /// Each object gets a new resourceVersion; an existing object with the same key is replaced.
    pub fn load_objects(&self, objs: Vec<Value>) -> Result<(), StoreError> {
        // CRDs first, so the objects they define can be loaded with them.
        let is_crd = |o: &Value| o["kind"] == "CustomResourceDefinition";
        if objs.iter().any(is_crd) && !objs.iter().all(is_crd) {
            let (crds, rest): (Vec<Value>, Vec<Value>) = objs.into_iter().partition(is_crd);
            self.load_objects(crds)?;
            return self.load_objects(rest);
        }
        let custom = self.custom_resources();
        let mut prepared = Vec::with_capacity(objs.len());
        for (index, obj) in objs.into_iter().enumerate() {
            let api_version = obj
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let kind = obj
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let resource = resources::by_kind(&api_version, &kind)
                .or_else(|| custom.by_kind(&api_version, &kind))
                .ok_or_else(|| StoreError::UnknownKind {
                    index,
                    api_version: api_version.clone(),
                    kind: kind.clone(),
                })?;
            let info = resource.info();
            let name = meta::name(&obj).to_string();
            let invalid = |message: String| StoreError::InvalidObject {
                index,
                kind: kind.clone(),
                name: name.clone(),
                message,
            };
            let namespace = if info.namespaced {
                let ns = meta::namespace(&obj);
                if ns.is_empty() {
                    "default".to_string()
                } else {
                    ns.to_string()
                }
            } else {
                String::new()
            };
            let mut obj = prepare::decode(info, obj, &namespace).map_err(|e| invalid(e.message))?;
            custom
                .admit(resource, &mut obj, true)
                .map_err(|e| invalid(e.message))?;
            let mut causes = prepare::validate(info, &obj);
            causes.extend(custom.validate(resource, &obj));
            if let Some(cause) = causes.first() {
                return Err(invalid(format!(
                    "{}: {}",
                    cause.field.as_deref().unwrap_or(""),
                    cause.message
                )));
            }
            let meta = meta::metadata_mut(&mut obj);
            meta.remove("resourceVersion");
            if !meta.contains_key("uid") {
                meta.insert("uid".into(), json!(self.random_uid()));
            }
            meta.entry("creationTimestamp")
                .or_insert_with(|| json!(meta::format_time(now())));
            if info.manages_generation {
                meta.entry("generation").or_insert(json!(1));
            }
            prepared.push((ObjectKey::new(resource, &namespace, &name), obj));
        }
        self.write(|objs, store| {
            for (key, obj) in prepared {
                if !key.namespace.is_empty() {
                    let ns_key = ObjectKey::new(resources::namespaces(), "", &key.namespace);
                    if objs.get(&ns_key).is_none() {
                        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": key.namespace, "uid": store.random_uid(),
                                         "creationTimestamp": meta::format_time(now())},
                            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
                        objs.put(ns_key, ns);
                    }
                }
                objs.put(key, obj);
            }
        });
        Ok(())
    }

    pub fn get(
        &self,
        resource: ResourceId,
        namespace: &str,
        name: &str,
    ) -> Result<Value, ApiError> {
        self.read(|objs| read::get(objs, resource, namespace, name))
    }

    /// A list object (`PodList` ...) of `resource` in `namespace` (all namespaces when None).
    pub fn list(
        &self,
        resource: ResourceId,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<Value, ApiError> {
        self.read(|objs| read::list(objs, resource, namespace, opts))
    }

    pub fn create(
        &self,
        resource: ResourceId,
        namespace: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.write(|objs, store| {
            let ownership = match opts.manager_for(&Value::Null) {
                Some(manager) => create::Ownership::RecordUpdate(manager),
                None => create::Ownership::Skip,
            };
            create::create(objs, store, resource, namespace, body, ownership)
        })
    }

    /// PUT of the whole object (or of its status with `target.status`).
    pub fn update(
        &self,
        target: &Target,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.write(|objs, store| {
            update::update(objs, store, target, body, update::Tracking::Record(opts))
        })
    }

    pub fn patch(
        &self,
        target: &Target,
        patch_type: PatchType,
        patch: &Value,
        opts: &WriteOptions,
    ) -> Result<PatchOutcome, ApiError> {
        self.write(|objs, store| {
            let info = target.resource.info();
            let current = objs.get(&target.key());
            if patch_type == PatchType::Apply {
                let manager = opts
                    .field_manager
                    .as_deref()
                    .ok_or_else(ApiError::field_manager_required)?;
                let now = meta::format_time(now());
                let request = ApplyRequest {
                    info,
                    manager,
                    force: opts.force,
                    subresource: target.subresource(),
                    now: &now,
                };
                return match current {
                    None if target.status => Err(ApiError::not_found(info, &target.name)),
                    None => {
                        let mut obj = patch::apply::apply(None, patch, &request)?;
                        meta::metadata_mut(&mut obj).insert("name".into(), json!(target.name));
                        let object = create::create(
                            objs,
                            store,
                            target.resource,
                            &target.namespace,
                            obj,
                            create::Ownership::Skip,
                        )?;
                        Ok(PatchOutcome {
                            object,
                            created: true,
                        })
                    }
                    Some(current) => {
                        check_patch_identity(patch, target)?;
                        let applied = patch::apply::apply(Some(&current), patch, &request)?;
                        let object = update::update(
                            objs,
                            store,
                            target,
                            applied,
                            update::Tracking::Precomputed,
                        )?;
                        Ok(PatchOutcome {
                            object,
                            created: false,
                        })
                    }
                };
            }
            let current = current.ok_or_else(|| ApiError::not_found(info, &target.name))?;
            if info.custom && patch_type == PatchType::Strategic {
                return Err(ApiError::unsupported_patch_for_custom_resources());
            }
            let patched = patch::apply_patch(patch_type, info.kind, &current, patch)?;
            let object =
                update::update(objs, store, target, patched, update::Tracking::Record(opts))?;
            Ok(PatchOutcome {
                object,
                created: false,
            })
        })
    }

    /// GET of the `/scale` subresource.
    pub fn get_scale(&self, target: &Target) -> Result<Value, ApiError> {
        let obj = self.get(target.resource, &target.namespace, &target.name)?;
        Ok(scale::of(&obj))
    }

    /// PUT or PATCH of the `/scale` subresource: `change` turns the current Scale into the
    /// wanted one, whose replicas and resourceVersion update the main resource.
    pub fn write_scale(
        &self,
        target: &Target,
        change: impl FnOnce(Value) -> Result<Value, ApiError>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.write(|objs, store| {
            let info = target.resource.info();
            let current = objs
                .get(&target.key())
                .ok_or_else(|| ApiError::not_found(info, &target.name))?;
            let wanted = change(scale::of(&current))?;
            let new = scale::apply(info, &current, &wanted)?;
            let updated = update::update(objs, store, target, new, update::Tracking::Record(opts))?;
            Ok(scale::of(&updated))
        })
    }

    pub fn delete(&self, target: &Target, opts: &DeleteOptions) -> Result<DeleteOutcome, ApiError> {
        self.write(|objs, _| delete::delete(objs, target, opts, now()))
    }
}

/// An apply configuration must name the object of the URL.
fn check_patch_identity(patch: &Value, target: &Target) -> Result<(), ApiError> {
    match patch.pointer("/metadata/name").and_then(Value::as_str) {
        Some(name) if name != target.name => Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            target.name
        ))),
        _ => Ok(()),
    }
}
