//! What upstream's CRD finalizer controller does when a CRD is deleted: delete every object
//! of its resource (objects with finalizers are waited for), then remove the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer so the CRD goes too.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::definition::{self, CLEANUP_FINALIZER};
use crate::meta;
use crate::resources;
use crate::verbs::{DeleteOptions, ListOptions, Store, Target, WriteOptions};

/// Runs until `shutdown`.
pub async fn run(store: Store, shutdown: CancellationToken) {
    let mut changes = store.subscribe();
    loop {
        clean_up(&store);
        if !crate::cluster::next_change(&mut changes, None, &shutdown).await {
            return;
        }
    }
}

/// One pass over the deleting CRDs (nothing to read when none is deleting, so busy servers
/// pay one table lookup per write batch).
pub fn clean_up(store: &Store) {
    if !store.custom_resources().any_terminating() {
        return;
    }
    let crds = resources::custom_resource_definitions();
    let Ok(list) = store.list(crds, None, &ListOptions::default()) else {
        return;
    };
    for crd in list["items"].as_array().into_iter().flatten() {
        if meta::is_deleting(crd)
            && meta::finalizers(crd).iter().any(|f| f == CLEANUP_FINALIZER)
            && delete_instances(store, crd)
        {
            remove_finalizer(store, crd);
        }
    }
}

/// Deletes the CRD's objects; true when none is left.
fn delete_instances(store: &Store, crd: &Value) -> bool {
    let mut left = 0;
    // Every version shares one storage: listing one of them sees all objects.
    for version in definition::served_versions(crd).into_iter().take(1) {
        let Ok(list) = store.list(version.resource, None, &ListOptions::default()) else {
            return false;
        };
        for item in list["items"].as_array().into_iter().flatten() {
            left += 1;
            if meta::is_deleting(item) {
                continue;
            }
            let target = Target::new(version.resource, meta::namespace(item), meta::name(item));
            if let Err(err) = store.delete(&target, &DeleteOptions::default()) {
                tracing::debug!(%err, crd = meta::name(crd), "deleting a custom resource");
            }
        }
    }
    if left == 0 {
        return true;
    }
    // Deleted at once unless finalizers hold them; look again.
    definition::served_versions(crd)
        .into_iter()
        .take(1)
        .all(|version| {
            store
                .list(version.resource, None, &ListOptions::default())
                .is_ok_and(|l| l["items"].as_array().is_none_or(Vec::is_empty))
        })
}

fn remove_finalizer(store: &Store, crd: &Value) {
    let mut updated = crd.clone();
    let finalizers: Vec<String> = meta::finalizers(crd)
        .into_iter()
        .filter(|f| f != CLEANUP_FINALIZER)
        .collect();
    meta::set_finalizers(&mut updated, &finalizers);
    let target = Target::new(
        resources::custom_resource_definitions(),
        "",
        meta::name(crd),
    );
    let opts = WriteOptions::manager("apiextensions-apiserver");
    if let Err(err) = store.update(&target, updated, &opts) {
        tracing::debug!(%err, crd = meta::name(crd), "removing the CRD cleanup finalizer");
    }
}
