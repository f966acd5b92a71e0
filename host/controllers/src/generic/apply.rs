//! The plan's writes, in order, each conditional: the primary's metadata and
//! status (resourceVersion the decision saw, then the one our write returned),
//! the children (creates owned by the primary; updates on the child's
//! resourceVersion; deletes on uid + resourceVersion), the primary's deletion
//! (uid + resourceVersion), then Events. 409 fails the reconcile: the key is
//! decided again from fresh state. 404 on the primary means it is gone: done.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{DynamicObject, PropagationPolicy};
use rekon_contract::controller::{Kind, Propagation};

use super::validate::{ChildWrite, Plan};
use super::{Cached, Generic};
use crate::reconcile::{Outcome, ReconcileError};
use crate::validate::Rejected;
use crate::writes::{WriteError, Writer};

impl Generic {
    pub(super) async fn apply(
        &self,
        key: &str,
        primary: &Cached,
        plan: Plan,
    ) -> Result<Outcome, ReconcileError> {
        let writer = Writer {
            client: self.ctx.client.clone(),
            journal: self.ctx.journal.clone(),
            controller: self.name,
        };
        let primary_kind = &self.checked.description.primary;
        let resolved = self.resolved(primary_kind);
        let plural = resolved.resource.plural.clone();
        let namespace = primary.key.namespace.as_str();
        let name = primary.key.name.as_str();
        let api = self.api(primary_kind, namespace);
        let mut resource_version = primary.resource_version.clone();

        // Our own write is the newest state we know (the mutation cache): the
        // next write chains its resourceVersion, and deciding again on the
        // older copy would only write in vain.
        let written = |stored: &DynamicObject| {
            let projected = self.checked.primary_projection.project_object(stored);
            self.primary
                .apply_own_write(Cached::new(&projected), &primary.resource_version);
            stored.metadata.resource_version.clone().unwrap_or_default()
        };
        // Metadata first, then status, each on the resourceVersion the one
        // before returned.
        let patches = [
            plan.metadata
                .map(|metadata| (serde_json::json!({ "metadata": metadata }), false)),
            plan.status
                .map(|status| (serde_json::json!({ "status": status }), resolved.has_status)),
        ];
        for (patch, status) in patches.into_iter().flatten() {
            match writer
                .merge_patch(
                    key,
                    &api,
                    &plural,
                    namespace,
                    name,
                    &resource_version,
                    patch,
                    status,
                )
                .await
            {
                Ok(stored) => resource_version = written(&stored),
                Err(WriteError::NotFound { .. }) => return Ok(Outcome::Done),
                Err(err) => return Err(err.into()),
            }
        }
        for child in plan.children {
            self.write_child(&writer, key, namespace, child).await?;
        }
        if let Some(deletion) = plan.delete_primary {
            writer
                .delete_object(
                    key,
                    &api,
                    &plural,
                    namespace,
                    name,
                    &primary.uid,
                    &deletion.resource_version,
                    deletion.propagation.map(policy),
                )
                .await?;
        }
        for event in plan.events {
            self.ctx
                .event(
                    reference(primary_kind, primary),
                    event.warning,
                    &event.reason,
                    "Reconcile",
                    event.message,
                )
                .await;
        }
        Ok(match plan.requeue_after {
            Some(after) => Outcome::RetryAfter(after),
            None => Outcome::Done,
        })
    }

    async fn write_child(
        &self,
        writer: &Writer,
        key: &str,
        namespace: &str,
        child: ChildWrite,
    ) -> Result<(), ReconcileError> {
        let kind = match &child {
            ChildWrite::Create { kind, .. } | ChildWrite::Update { kind, .. } => kind,
            ChildWrite::Delete(child) => &child.kind,
        };
        let plural = self.resolved(kind).resource.plural.clone();
        let api = self.api(kind, namespace);
        match child {
            ChildWrite::Create { kind, object } => {
                let object: DynamicObject = serde_json::from_value(object).map_err(|err| {
                    ReconcileError::from(Rejected::decision(
                        key,
                        format!("create-child {kind}: {err}"),
                    ))
                })?;
                let created = writer
                    .create_object(key, &api, &plural, namespace, &object)
                    .await?;
                self.remember_child(&kind, &created);
            }
            ChildWrite::Update {
                kind,
                name,
                resource_version,
                patch,
            } => {
                let stored = writer
                    .merge_patch(
                        key,
                        &api,
                        &plural,
                        namespace,
                        &name,
                        &resource_version,
                        patch,
                        false,
                    )
                    .await?;
                self.remember_child(&kind, &stored);
            }
            ChildWrite::Delete(child) => {
                writer
                    .delete_object(
                        key,
                        &api,
                        &plural,
                        namespace,
                        &child.name,
                        &child.uid,
                        &child.resource_version,
                        None,
                    )
                    .await?;
            }
        }
        Ok(())
    }

    /// A child we wrote goes into its cache at once (the mutation cache): the
    /// next decision sees it even before the watch does, so nothing is created twice.
    fn remember_child(&self, kind: &Kind, stored: &DynamicObject) {
        for (i, watched) in self.watched.iter().enumerate() {
            if &watched.kind != kind {
                continue;
            }
            let projected = Cached::new(&self.checked.watch_projections[i].project_object(stored));
            match watched.cache.get(&projected.key) {
                Some(cached) => {
                    let over = cached.resource_version.clone();
                    watched.cache.apply_own_write(projected, &over);
                }
                None => {
                    watched.cache.apply(projected);
                }
            }
        }
    }
}

fn policy(propagation: Propagation) -> PropagationPolicy {
    match propagation {
        Propagation::Background => PropagationPolicy::Background,
        Propagation::Foreground => PropagationPolicy::Foreground,
        Propagation::Orphan => PropagationPolicy::Orphan,
    }
}

fn reference(kind: &Kind, primary: &Cached) -> ObjectReference {
    let given = |field: &str| Some(field.to_string()).filter(|f| !f.is_empty());
    ObjectReference {
        api_version: Some(kind.api_version()),
        kind: Some(kind.kind.clone()),
        namespace: given(&primary.key.namespace),
        name: given(&primary.key.name),
        uid: given(&primary.uid),
        resource_version: given(&primary.resource_version),
        ..ObjectReference::default()
    }
}
