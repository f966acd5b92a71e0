//! Conditional writes to the API server, each journaled with its status code.
//!
//! Every update here carries the resourceVersion the decision saw (a merge patch
//! that sets `metadata.resourceVersion` is conditional: 409 on mismatch), and every
//! delete carries uid + resourceVersion preconditions. Nothing is written blindly:
//! a write whose resourceVersion is empty is refused before it is sent.

use std::fmt::Debug;
use std::sync::Arc;

use kube::api::{
    DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions as KubePreconditions,
};
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::journal::{Entry, Journal, Preconditions};

/// Why a write did not happen. 409 means "decide again from fresh state".
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("conflict writing {object}: {message}")]
    Conflict { object: String, message: String },
    #[error("{object} not found")]
    NotFound { object: String },
    #[error("{object} rejected as invalid: {message}")]
    Invalid { object: String, message: String },
    #[error("writing {object} failed: {message}")]
    Failed { object: String, message: String },
    /// The write would carry no resourceVersion and so apply blindly: not sent.
    #[error("not writing {object}: no resourceVersion to make the write conditional")]
    Unconditional { object: String },
    /// Leadership is gone: the request was not sent, or was cut off in flight.
    #[error("not writing {object}: this replica no longer leads")]
    NotLeading { object: String },
}

impl WriteError {
    fn from_kube(object: String, err: kube::Error) -> (u16, Self) {
        match err {
            kube::Error::Api(status) => {
                let message = status.message.clone();
                let error = match status.code {
                    409 => Self::Conflict { object, message },
                    404 => Self::NotFound { object },
                    400 | 422 => Self::Invalid { object, message },
                    _ => Self::Failed {
                        object,
                        message: format!("{} {}: {}", status.code, status.reason, message),
                    },
                };
                (status.code, error)
            }
            other if crate::fence::is_revoked(&other) => (0, Self::NotLeading { object }),
            other => (
                0,
                Self::Failed {
                    object,
                    message: other.to_string(),
                },
            ),
        }
    }

    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. })
    }
}

/// What a delete achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deleted {
    /// The object is gone (or was already: 404).
    Gone,
    /// The object now carries a deletionTimestamp; finalizers are pending.
    Pending,
}

/// Writes on behalf of one controller and one key.
pub struct Writer {
    pub client: Client,
    pub journal: Arc<Journal>,
    pub controller: &'static str,
}

struct WriteCall<'a> {
    key: &'a str,
    verb: &'static str,
    resource: String,
    subresource: Option<&'static str>,
    namespace: &'a str,
    name: &'a str,
    preconditions: Preconditions,
}

impl Writer {
    fn journal_write(&self, call: WriteCall<'_>, code: u16) {
        self.journal.record(Entry::Write {
            controller: self.controller.to_string(),
            key: call.key.to_string(),
            verb: call.verb.to_string(),
            resource: call.resource,
            subresource: call.subresource.map(str::to_string),
            namespace: call.namespace.to_string(),
            name: call.name.to_string(),
            preconditions: call.preconditions,
            code,
        });
    }

    fn finish<T>(
        &self,
        call: WriteCall<'_>,
        result: Result<T, kube::Error>,
    ) -> Result<T, WriteError> {
        let object = format!("{} {}/{}", call.resource, call.namespace, call.name);
        match result {
            Ok(value) => {
                self.journal_write(call, 200);
                Ok(value)
            }
            Err(err) => {
                let (code, error) = WriteError::from_kube(object, err);
                self.journal_write(call, code);
                Err(error)
            }
        }
    }

    /// Replaces `metadata.finalizers`, conditional on `resource_version`.
    pub async fn set_finalizers<K>(
        &self,
        key: &str,
        namespace: &str,
        name: &str,
        resource_version: &str,
        finalizers: &[String],
    ) -> Result<K, WriteError>
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + Debug,
    {
        conditional::<K>(namespace, name, resource_version)?;
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        let patch = json!({
            "metadata": { "resourceVersion": resource_version, "finalizers": finalizers }
        });
        let result = api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        self.finish(
            WriteCall {
                key,
                verb: "patch",
                resource: K::plural(&()).to_string(),
                subresource: None,
                namespace,
                name,
                preconditions: rv_only(resource_version),
            },
            result,
        )
    }

    /// Merges `status` into the object's status subresource, conditional on
    /// `resource_version`. Lists in `status` replace the stored lists whole.
    pub async fn patch_status<K>(
        &self,
        key: &str,
        namespace: &str,
        name: &str,
        resource_version: &str,
        status: Value,
    ) -> Result<K, WriteError>
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + Debug,
    {
        conditional::<K>(namespace, name, resource_version)?;
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        let patch =
            json!({ "metadata": { "resourceVersion": resource_version }, "status": status });
        let result = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        self.finish(
            WriteCall {
                key,
                verb: "patch",
                resource: K::plural(&()).to_string(),
                subresource: Some("status"),
                namespace,
                name,
                preconditions: rv_only(resource_version),
            },
            result,
        )
    }

    /// Creates `obj` (which may use generateName).
    pub async fn create<K>(&self, key: &str, namespace: &str, obj: &K) -> Result<K, WriteError>
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + Serialize
            + Debug,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        let result = api.create(&PostParams::default(), obj).await;
        let meta = obj.meta();
        let name = meta
            .name
            .clone()
            .or_else(|| meta.generate_name.clone())
            .unwrap_or_default();
        self.finish(
            WriteCall {
                key,
                verb: "create",
                resource: K::plural(&()).to_string(),
                subresource: None,
                namespace,
                name: &name,
                preconditions: Preconditions {
                    uid: None,
                    resource_version: None,
                },
            },
            result,
        )
    }

    /// Deletes with uid + resourceVersion preconditions. 404 is success.
    pub async fn delete<K>(
        &self,
        key: &str,
        namespace: &str,
        name: &str,
        uid: &str,
        resource_version: &str,
    ) -> Result<Deleted, WriteError>
    where
        K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + Debug,
    {
        conditional::<K>(namespace, name, resource_version)?;
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        let params = DeleteParams {
            preconditions: Some(KubePreconditions {
                uid: Some(uid.to_string()),
                resource_version: Some(resource_version.to_string()),
            }),
            ..DeleteParams::default()
        };
        let result = api.delete(name, &params).await;
        let outcome = self.finish(
            WriteCall {
                key,
                verb: "delete",
                resource: K::plural(&()).to_string(),
                subresource: None,
                namespace,
                name,
                preconditions: Preconditions {
                    uid: Some(uid.to_string()),
                    resource_version: Some(resource_version.to_string()),
                },
            },
            result,
        );
        match outcome {
            // A returned object is not proof of removal: look at deletionTimestamp.
            Ok(either) => Ok(match either {
                either::Either::Left(obj) if obj.meta().deletion_timestamp.is_some() => {
                    Deleted::Pending
                }
                _ => Deleted::Gone,
            }),
            Err(WriteError::NotFound { .. }) => Ok(Deleted::Gone),
            Err(err) => Err(err),
        }
    }
}

/// Writes to a resource known only at run time (a controller module's kinds),
/// with the same preconditions and journal as the typed writes above.
impl Writer {
    /// A JSON merge patch of the object (or of its status subresource),
    /// conditional on `resource_version`.
    #[allow(clippy::too_many_arguments)]
    pub async fn merge_patch(
        &self,
        key: &str,
        api: &Api<DynamicObject>,
        resource: &str,
        namespace: &str,
        name: &str,
        resource_version: &str,
        mut patch: Value,
        status: bool,
    ) -> Result<DynamicObject, WriteError> {
        unconditional(resource, namespace, name, resource_version)?;
        patch["metadata"]["resourceVersion"] = json!(resource_version);
        let params = PatchParams::default();
        let result = if status {
            api.patch_status(name, &params, &Patch::Merge(&patch)).await
        } else {
            api.patch(name, &params, &Patch::Merge(&patch)).await
        };
        self.finish(
            WriteCall {
                key,
                verb: "patch",
                resource: resource.to_string(),
                subresource: status.then_some("status"),
                namespace,
                name,
                preconditions: rv_only(resource_version),
            },
            result,
        )
    }

    /// Creates `object` (which may use generateName).
    pub async fn create_object(
        &self,
        key: &str,
        api: &Api<DynamicObject>,
        resource: &str,
        namespace: &str,
        object: &DynamicObject,
    ) -> Result<DynamicObject, WriteError> {
        let result = api.create(&PostParams::default(), object).await;
        let name = object
            .metadata
            .name
            .clone()
            .or_else(|| object.metadata.generate_name.clone())
            .unwrap_or_default();
        self.finish(
            WriteCall {
                key,
                verb: "create",
                resource: resource.to_string(),
                subresource: None,
                namespace,
                name: &name,
                preconditions: Preconditions {
                    uid: None,
                    resource_version: None,
                },
            },
            result,
        )
    }

    /// Deletes with uid + resourceVersion preconditions and an optional
    /// propagation policy. 404 is success.
    #[allow(clippy::too_many_arguments)]
    pub async fn delete_object(
        &self,
        key: &str,
        api: &Api<DynamicObject>,
        resource: &str,
        namespace: &str,
        name: &str,
        uid: &str,
        resource_version: &str,
        propagation: Option<kube::api::PropagationPolicy>,
    ) -> Result<Deleted, WriteError> {
        unconditional(resource, namespace, name, resource_version)?;
        let params = DeleteParams {
            preconditions: Some(KubePreconditions {
                uid: Some(uid.to_string()),
                resource_version: Some(resource_version.to_string()),
            }),
            propagation_policy: propagation,
            ..DeleteParams::default()
        };
        let result = api.delete(name, &params).await;
        let outcome = self.finish(
            WriteCall {
                key,
                verb: "delete",
                resource: resource.to_string(),
                subresource: None,
                namespace,
                name,
                preconditions: Preconditions {
                    uid: Some(uid.to_string()),
                    resource_version: Some(resource_version.to_string()),
                },
            },
            result,
        );
        match outcome {
            Ok(either::Either::Left(obj)) if obj.metadata.deletion_timestamp.is_some() => {
                Ok(Deleted::Pending)
            }
            Ok(_) | Err(WriteError::NotFound { .. }) => Ok(Deleted::Gone),
            Err(err) => Err(err),
        }
    }
}

fn unconditional(
    resource: &str,
    namespace: &str,
    name: &str,
    resource_version: &str,
) -> Result<(), WriteError> {
    if resource_version.is_empty() {
        return Err(WriteError::Unconditional {
            object: format!("{resource} {namespace}/{name}"),
        });
    }
    Ok(())
}

/// Refuses a write that would carry an empty resourceVersion: the API server
/// would apply it whatever the object's version is. A claim key chains the
/// version each write returns into the next one, so this also stops a chain
/// whose previous answer carried none.
fn conditional<K: Resource<DynamicType = ()>>(
    namespace: &str,
    name: &str,
    resource_version: &str,
) -> Result<(), WriteError> {
    unconditional(&K::plural(&()), namespace, name, resource_version)
}

fn rv_only(resource_version: &str) -> Preconditions {
    Preconditions {
        uid: None,
        resource_version: Some(resource_version.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;

    /// A writer whose requests, if sent, fail to connect (nothing listens).
    fn writer() -> Writer {
        Writer {
            client: Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap()))
                .unwrap(),
            journal: Arc::new(Journal::new()),
            controller: "test",
        }
    }

    #[tokio::test]
    async fn an_empty_resource_version_is_refused_before_anything_is_sent() {
        let w = writer();
        let finalizers = w
            .set_finalizers::<PersistentVolumeClaim>("ns/data", "ns", "data", "", &[])
            .await
            .unwrap_err();
        assert!(
            matches!(finalizers, WriteError::Unconditional { .. }),
            "{finalizers}"
        );
        let status = w
            .patch_status::<PersistentVolumeClaim>("ns/data", "ns", "data", "", json!({}))
            .await
            .unwrap_err();
        assert!(
            matches!(status, WriteError::Unconditional { .. }),
            "{status}"
        );
        let delete = w
            .delete::<PersistentVolumeClaim>("ns/data", "ns", "data", "uid", "")
            .await
            .unwrap_err();
        assert!(
            matches!(delete, WriteError::Unconditional { .. }),
            "{delete}"
        );
        assert!(w.journal.writes().is_empty(), "nothing was sent");
        // With a version the request is sent (and fails to connect here).
        let sent = w
            .set_finalizers::<PersistentVolumeClaim>("ns/data", "ns", "data", "5", &[])
            .await
            .unwrap_err();
        assert!(matches!(sent, WriteError::Failed { .. }), "{sent}");
    }
}
