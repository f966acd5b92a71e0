//! Create (rows 7, 8, 22, 23): server-set fields, generateName with retry, namespace
//! lifecycle, PVC-protection admission.

use serde_json::{Value, json};

use super::{PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER, Store, now, prepare};
use crate::errors::ApiError;
use crate::meta;
use crate::patch::fieldset;
use crate::resources::{self, ResourceId};
use crate::store::{ObjectKey, Objects};

/// Upstream `maxNameGenerationCreateAttempts` (KEP-4420, GA in 1.32). Before 1.32 a collision
/// on a generated name failed at once; this server implements the newer retry.
pub const MAX_NAME_GENERATION_ATTEMPTS: usize = 8;

pub enum Ownership<'a> {
    /// Record the written fields as owned by this manager (operation Update).
    RecordUpdate(&'a str),
    /// Ownership was already computed (server-side apply) or is not tracked.
    Skip,
}

pub fn create(
    objs: &mut Objects,
    store: &Store,
    resource: ResourceId,
    namespace: &str,
    body: Value,
    ownership: Ownership,
) -> Result<Value, ApiError> {
    let info = resource.info();
    if info.namespaced && namespace.is_empty() {
        return Err(ApiError::method_not_allowed(format!(
            "create of {} needs a namespace in the URL",
            info.qualified()
        )));
    }
    let client_rv = body
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut obj = prepare::decode(info, body, namespace)?;
    let custom = store.custom_resources();
    custom.admit(resource, &mut obj, true)?;
    let explicit_name = meta::name(&obj).to_string();

    if info.namespaced {
        match objs.get(&ObjectKey::new(resources::namespaces(), "", namespace)) {
            None => return Err(ApiError::namespace_not_found(namespace)),
            Some(ns) if meta::is_deleting(&ns) => {
                return Err(ApiError::namespace_terminating(
                    info,
                    &explicit_name,
                    namespace,
                ));
            }
            Some(_) => {}
        }
    }

    let generate_prefix = meta::str_field(&obj, "generateName")
        .filter(|_| explicit_name.is_empty())
        .map(str::to_string);
    if let Some(prefix) = &generate_prefix {
        let name = store.random_name(prefix);
        meta::metadata_mut(&mut obj).insert("name".into(), json!(name));
    }

    let timestamp = meta::format_time(now());
    {
        let uid = store.random_uid();
        let m = meta::metadata_mut(&mut obj);
        m.insert("uid".into(), json!(uid));
        m.insert("creationTimestamp".into(), json!(timestamp));
        m.remove("deletionTimestamp");
        m.remove("deletionGracePeriodSeconds");
        m.remove("selfLink");
        m.remove("resourceVersion");
        if info.manages_generation {
            m.insert("generation".into(), json!(1));
        }
        if matches!(ownership, Ownership::RecordUpdate(_)) {
            m.remove("managedFields");
        }
    }
    prepare::reset_status_on_create(info, &mut obj);
    // Upstream's StorageObjectInUseProtection admission plugin protects PVCs and PVs.
    let protection = match (info.group, info.kind) {
        ("", "PersistentVolumeClaim") => Some(PVC_PROTECTION_FINALIZER),
        ("", "PersistentVolume") => Some(PV_PROTECTION_FINALIZER),
        _ => None,
    };
    if let Some(finalizer) = protection.filter(|_| store.settings().pvc_protection_admission) {
        let mut finalizers = meta::finalizers(&obj);
        if !finalizers.iter().any(|f| f == finalizer) {
            finalizers.push(finalizer.to_string());
            meta::set_finalizers(&mut obj, &finalizers);
        }
    }

    let mut causes = prepare::validate(info, &obj);
    causes.extend(custom.validate(resource, &obj));
    if !causes.is_empty() {
        return Err(ApiError::invalid(info, meta::name(&obj), causes));
    }
    if !client_rv.is_empty() {
        return Err(ApiError::internal_unknown(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    if let Ownership::RecordUpdate(manager) = ownership {
        fieldset::record_update(
            &json!({}),
            &mut obj,
            manager,
            None,
            &info.api_version(),
            &timestamp,
        );
    }

    let mut attempts = 1;
    loop {
        let key = ObjectKey::new(resource, namespace_of(info, namespace), meta::name(&obj));
        if objs.get(&key).is_none() {
            return Ok(objs.put(key, obj));
        }
        match &generate_prefix {
            Some(prefix) if attempts < MAX_NAME_GENERATION_ATTEMPTS => {
                attempts += 1;
                let name = store.random_name(prefix);
                meta::metadata_mut(&mut obj).insert("name".into(), json!(name));
            }
            _ => return Err(ApiError::already_exists(info, meta::name(&obj))),
        }
    }
}

fn namespace_of<'a>(info: &crate::resources::ResourceInfo, namespace: &'a str) -> &'a str {
    if info.namespaced { namespace } else { "" }
}
