//! STAND-IN, to be replaced at merge by `rekon_controllers::generic::release`
//! (branch `release`), which has the same signature: in `object/removal.rs`
//! change `use crate::object::release::{...}` to that module and delete this
//! file. Until then: the simplest correct release, one list and one
//! conditional patch per object carrying a finalizer.

use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

/// Attempts per object before it counts as remaining (each 409 re-reads it).
const ATTEMPTS: usize = 5;

/// What one release pass did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    /// Objects whose finalizers were removed.
    pub released: usize,
    /// Objects still carrying one of them.
    pub remaining: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error("listing {kind}: {source}")]
    List { kind: String, source: kube::Error },
}

/// Removes `finalizers` from every object of `resource`, each with a patch
/// conditional on the resourceVersion read (409: read again and retry; 404: gone).
pub async fn release(
    client: &Client,
    resource: &ApiResource,
    namespaced: bool,
    finalizers: &[String],
) -> Result<Released, ReleaseError> {
    let all: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    let listed = all
        .list(&ListParams::default())
        .await
        .map_err(|source| ReleaseError::List {
            kind: resource.kind.clone(),
            source,
        })?;
    let mut done = Released {
        released: 0,
        remaining: 0,
    };
    for object in listed.items {
        if !carries(&object, finalizers) {
            continue;
        }
        let api = match object.namespace().filter(|_| namespaced) {
            Some(ns) => Api::namespaced_with(client.clone(), &ns, resource),
            None => all.clone(),
        };
        if release_one(&api, object, finalizers).await {
            done.released += 1;
        } else {
            done.remaining += 1;
        }
    }
    Ok(done)
}

fn carries(object: &DynamicObject, finalizers: &[String]) -> bool {
    object.finalizers().iter().any(|f| finalizers.contains(f))
}

/// Whether `object` no longer carries any of `finalizers`.
async fn release_one(
    api: &Api<DynamicObject>,
    mut object: DynamicObject,
    finalizers: &[String],
) -> bool {
    let name = object.name_any();
    for _ in 0..ATTEMPTS {
        if !carries(&object, finalizers) {
            return true;
        }
        let kept: Vec<&String> = object
            .finalizers()
            .iter()
            .filter(|f| !finalizers.contains(f))
            .collect();
        let patch = json!({"metadata": {
            "finalizers": kept,
            "resourceVersion": object.resource_version(),
        }});
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return true,
            Err(kube::Error::Api(status)) if status.code == 404 => return true,
            Err(kube::Error::Api(status)) if status.code == 409 => match api.get_opt(&name).await {
                Ok(Some(fresh)) => object = fresh,
                Ok(None) => return true,
                Err(_) => return false,
            },
            Err(err) => {
                tracing::warn!(object = %name, error = %err, "cannot release finalizers; the next pass retries");
                return false;
            }
        }
    }
    false
}
