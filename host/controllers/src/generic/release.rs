//! Releases finalizers from every object of a kind: what a DecisionModule's
//! removal policy `release` does before a controller module goes, so that no
//! object waits for a finalizer nobody will remove any more.
//!
//! Each write is a merge patch of `metadata.finalizers` carrying the
//! resourceVersion it was computed from (the writer's convention, 409 on
//! mismatch): the other finalizers stay, in their order, whoever added them
//! meanwhile. A 409 re-reads that object and tries again (bounded); a 404 means
//! the object is gone, which is what releasing it was for.

use std::sync::Arc;

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::json;

use crate::journal::Journal;
use crate::live_lists::paginated;
use crate::writes::{WriteError, Writer};

/// Writes per object: the first, then one per 409 (each after a fresh read).
const ATTEMPTS: usize = 5;
/// What a release did, over the objects that carried any of the finalizers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    /// Objects that no longer carry them (written, released by someone else, or gone).
    pub released: usize,
    /// Objects that still carry them.
    pub remaining: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error("releasing {finalizers:?}: listing {resource}: {source}")]
    List {
        resource: String,
        finalizers: Vec<String>,
        #[source]
        source: kube::Error,
    },
    #[error(
        "releasing {finalizers:?}: {remaining} {resource} still carry them ({released} released): {}",
        .failures.join("; ")
    )]
    Remaining {
        resource: String,
        finalizers: Vec<String>,
        released: usize,
        remaining: usize,
        /// One line per object left: what it is and why.
        failures: Vec<String>,
    },
}

impl ReleaseError {
    /// The counts so far, when the objects could be listed at all.
    pub fn progress(&self) -> Option<Released> {
        match self {
            Self::List { .. } => None,
            Self::Remaining {
                released,
                remaining,
                ..
            } => Some(Released {
                released: *released,
                remaining: *remaining,
            }),
        }
    }
}

/// Removes `finalizers` from every object of `resource` that carries any of
/// them. `client` is the one every write of the host goes through (the fenced
/// one in production). Objects left carrying them are an error naming each.
pub async fn release(
    client: &Client,
    resource: &ApiResource,
    namespaced: bool,
    finalizers: &[String],
) -> Result<Released, ReleaseError> {
    let list_error = |source| ReleaseError::List {
        resource: resource.plural.clone(),
        finalizers: finalizers.to_vec(),
        source,
    };
    let carrying = list_carrying(client, resource, finalizers)
        .await
        .map_err(list_error)?;
    let writer = Writer {
        client: client.clone(),
        // Not a decision's write: the log says what happened, as for the list.
        journal: Arc::new(Journal::disabled()),
        controller: "release",
    };
    let mut done = Released {
        released: 0,
        remaining: 0,
    };
    let mut failures = Vec::new();
    for object in carrying {
        let namespace = object.metadata.namespace.clone().unwrap_or_default();
        let api = if namespaced {
            Api::namespaced_with(client.clone(), &namespace, resource)
        } else {
            Api::all_with(client.clone(), resource)
        };
        match release_one(&writer, &api, resource, object, finalizers).await {
            Ok(()) => done.released += 1,
            Err(err) => {
                tracing::warn!(resource = %resource.plural, %err, ?finalizers,
                    "could not release finalizers");
                done.remaining += 1;
                failures.push(err.to_string());
            }
        }
    }
    tracing::info!(resource = %resource.plural, ?finalizers, released = done.released,
        remaining = done.remaining, "released finalizers");
    if failures.is_empty() {
        Ok(done)
    } else {
        Err(ReleaseError::Remaining {
            resource: resource.plural.clone(),
            finalizers: finalizers.to_vec(),
            released: done.released,
            remaining: done.remaining,
            failures,
        })
    }
}

/// Every object of `resource` carrying any of `finalizers`, page by page.
async fn list_carrying(
    client: &Client,
    resource: &ApiResource,
    finalizers: &[String],
) -> Result<Vec<DynamicObject>, kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    paginated(
        &ListParams::default(),
        |params| {
            let api = &api;
            async move { api.list(&params).await }
        },
        Vec::new,
        |carrying, items| {
            carrying.extend(
                items
                    .into_iter()
                    .filter(|object| kept(object, finalizers).is_some()),
            )
        },
    )
    .await
}

/// The object's finalizers without `finalizers`, in their order; `None` when
/// it carries none of them.
fn kept(object: &DynamicObject, finalizers: &[String]) -> Option<Vec<String>> {
    let all = object.metadata.finalizers.as_deref().unwrap_or_default();
    let kept: Vec<String> = all
        .iter()
        .filter(|f| !finalizers.contains(f))
        .cloned()
        .collect();
    (kept.len() < all.len()).then_some(kept)
}

/// Removes `finalizers` from `object`, conditional on the resourceVersion it
/// was read at; a 409 reads it again and retries, up to [`ATTEMPTS`] writes.
async fn release_one(
    writer: &Writer,
    api: &Api<DynamicObject>,
    resource: &ApiResource,
    mut object: DynamicObject,
    finalizers: &[String],
) -> Result<(), WriteError> {
    let namespace = object.metadata.namespace.clone().unwrap_or_default();
    let name = object.metadata.name.clone().unwrap_or_default();
    let key = format!("{namespace}/{name}");
    let mut attempt = 1;
    loop {
        let Some(kept) = kept(&object, finalizers) else {
            return Ok(());
        };
        let resource_version = object.metadata.resource_version.clone().unwrap_or_default();
        let patch = json!({ "metadata": { "finalizers": kept } });
        let written = writer
            .merge_patch(
                &key,
                api,
                &resource.plural,
                &namespace,
                &name,
                &resource_version,
                patch,
                false,
            )
            .await;
        match written {
            Ok(_) | Err(WriteError::NotFound { .. }) => return Ok(()),
            Err(err) if err.is_conflict() && attempt < ATTEMPTS => {
                attempt += 1;
                match api.get_opt(&name).await {
                    Ok(Some(fresh)) => object = fresh,
                    Ok(None) => return Ok(()),
                    Err(err) => {
                        return Err(WriteError::Failed {
                            object: format!("{} {key}", resource.plural),
                            message: format!("reading it again after a conflict: {err}"),
                        });
                    }
                }
            }
            Err(err) => return Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    use kube::api::PostParams;
    use rekon_apiserver::{ApiServer, FaultConfig, RequestFault, ServerConfig, Verb};
    use serde_json::Value;

    use super::*;

    const OURS: &str = "example.com/ours";
    const ALSO_OURS: &str = "example.com/also-ours";

    fn ours() -> Vec<String> {
        vec![OURS.to_string(), ALSO_OURS.to_string()]
    }

    fn pvcs() -> ApiResource {
        ApiResource::erase::<PersistentVolumeClaim>(&())
    }

    fn pvc(name: &str, finalizers: &[&str], deleting: bool) -> Value {
        let mut pvc = json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": { "namespace": "ns", "name": name, "finalizers": finalizers },
            "spec": { "accessModes": ["ReadWriteOnce"],
                      "resources": { "requests": { "storage": "1Gi" } } }
        });
        if deleting {
            pvc["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        pvc
    }

    /// A server holding `objects` (after the namespace `ns`), and a client.
    async fn serve(config: ServerConfig, objects: Vec<Value>) -> (ApiServer, Client) {
        // No admission adding kubernetes.io/pvc-protection: the finalizers are the test's.
        let config = config.pvc_protection_admission(false);
        let server = ApiServer::start(config, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let mut all =
            vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})];
        all.extend(objects);
        server.store().load_objects(all).unwrap();
        let client = Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();
        (server, client)
    }

    fn api(client: &Client) -> Api<DynamicObject> {
        Api::namespaced_with(client.clone(), "ns", &pvcs())
    }

    async fn finalizers_of(client: &Client, name: &str) -> Option<Vec<String>> {
        let object = api(client).get_opt(name).await.unwrap()?;
        Some(object.metadata.finalizers.unwrap_or_default())
    }

    /// Patches held this long at the server: a test changes the object meanwhile.
    const HELD: Duration = Duration::from_millis(1500);

    fn patches_held() -> ServerConfig {
        ServerConfig::new().faults(
            FaultConfig::new().request(
                RequestFault::new()
                    .verbs([Verb::Patch])
                    .resources(["persistentvolumeclaims"])
                    .latency(HELD),
            ),
        )
    }

    /// Patches the server has received so far (each counted as it arrives).
    fn patches_received(server: &ApiServer) -> u64 {
        server.faults_injected()["added latency"]
    }

    /// Releases ours from the PVCs; while the first patch waits at the server,
    /// someone else changes the finalizers of `name` (a PUT: not held), so the
    /// patch's resourceVersion is stale when it lands.
    async fn release_while_changed(
        server: &ApiServer,
        client: &Client,
        name: &str,
        change: impl FnOnce(&mut Vec<String>),
    ) -> Result<Released, ReleaseError> {
        let releasing = tokio::spawn({
            let client = client.clone();
            async move { release(&client, &pvcs(), true, &ours()).await }
        });
        tokio::time::timeout(Duration::from_secs(20), async {
            while patches_received(server) == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the release sends a patch");
        let mut object = api(client).get(name).await.unwrap();
        change(object.metadata.finalizers.get_or_insert_default());
        api(client)
            .replace(name, &PostParams::default(), &object)
            .await
            .unwrap();
        releasing.await.unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn only_the_named_finalizers_go_and_the_others_stay_in_order() {
        let (server, client) = serve(
            ServerConfig::new(),
            vec![
                pvc(
                    "mixed",
                    &["a.example/first", OURS, "b.example/last", ALSO_OURS],
                    false,
                ),
                pvc("only-ours", &[OURS], false),
                pvc("others", &["a.example/first"], false),
                pvc("bare", &[], false),
            ],
        )
        .await;
        let untouched = api(&client).get("others").await.unwrap();
        let done = release(&client, &pvcs(), true, &ours()).await.unwrap();
        assert_eq!(
            done,
            Released {
                released: 2,
                remaining: 0
            }
        );
        assert_eq!(
            finalizers_of(&client, "mixed").await.unwrap(),
            ["a.example/first", "b.example/last"]
        );
        assert!(
            finalizers_of(&client, "only-ours")
                .await
                .unwrap()
                .is_empty()
        );
        let others = api(&client).get("others").await.unwrap();
        assert_eq!(
            others.metadata.resource_version, untouched.metadata.resource_version,
            "an object without them is not written"
        );
        // Nothing left: a second release writes nothing.
        let again = release(&client, &pvcs(), true, &ours()).await.unwrap();
        assert_eq!(
            again,
            Released {
                released: 0,
                remaining: 0
            }
        );
        server.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_deleting_object_goes_once_released_and_cluster_scoped_kinds_work_too() {
        let pv = |name: &str, finalizers: &[&str]| {
            json!({
                "apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": { "name": name, "finalizers": finalizers,
                              "deletionTimestamp": "2026-01-01T00:00:00Z" },
                "spec": { "capacity": { "storage": "1Gi" }, "accessModes": ["ReadWriteOnce"],
                          "hostPath": { "path": "/data" } }
            })
        };
        let (server, client) = serve(
            ServerConfig::new(),
            vec![
                pvc("deleting", &[OURS], true),
                pv("pv-deleting", &[OURS]),
                pv("pv-held", &[OURS, "example.com/other-finalizer"]),
            ],
        )
        .await;
        let done = release(&client, &pvcs(), true, &ours()).await.unwrap();
        assert_eq!(done.released, 1);
        assert_eq!(finalizers_of(&client, "deleting").await, None, "gone");

        let pvs_resource = ApiResource::erase::<PersistentVolume>(&());
        let done = release(&client, &pvs_resource, false, &ours())
            .await
            .unwrap();
        assert_eq!(done.released, 2);
        let pvs: Api<DynamicObject> = Api::all_with(client.clone(), &pvs_resource);
        assert!(pvs.get_opt("pv-deleting").await.unwrap().is_none(), "gone");
        let held = pvs.get("pv-held").await.unwrap();
        assert_eq!(
            held.metadata.finalizers.unwrap(),
            ["example.com/other-finalizer"],
            "still deleting, held by the other finalizer"
        );
        server.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_concurrent_update_is_read_again_and_its_finalizer_kept() {
        let (server, client) = serve(patches_held(), vec![pvc("data", &[OURS], false)]).await;
        let done = release_while_changed(&server, &client, "data", |finalizers| {
            finalizers.push("example.com/late".into())
        })
        .await
        .unwrap();
        assert_eq!(done.released, 1);
        assert_eq!(
            finalizers_of(&client, "data").await.unwrap(),
            ["example.com/late"],
            "computed again from the fresh object"
        );
        assert_eq!(patches_received(&server), 2, "a 409, then the retry");
        server.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_object_gone_meanwhile_counts_as_released() {
        let (server, client) = serve(patches_held(), vec![pvc("going", &[OURS], true)]).await;
        // Someone else clears the finalizers of the deleting PVC: it is gone
        // before our patch lands (404).
        let done = release_while_changed(&server, &client, "going", Vec::clear)
            .await
            .unwrap();
        assert_eq!(finalizers_of(&client, "going").await, None);
        assert_eq!(
            done,
            Released {
                released: 1,
                remaining: 0
            }
        );
        assert_eq!(patches_received(&server), 1, "no retry after a 404");
        server.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conflicts_without_end_stop_after_a_bound_and_name_the_object() {
        let always_conflicting = ServerConfig::new().faults(
            FaultConfig::new().request(
                RequestFault::new()
                    .verbs([Verb::Patch])
                    .resources(["persistentvolumeclaims"])
                    .conflict(1.0),
            ),
        );
        let (server, client) = serve(
            always_conflicting,
            vec![pvc("contended", &[OURS], false), pvc("other", &[], false)],
        )
        .await;
        let err = release(&client, &pvcs(), true, &ours()).await.unwrap_err();
        assert_eq!(
            err.progress(),
            Some(Released {
                released: 0,
                remaining: 1
            })
        );
        let message = err.to_string();
        assert!(
            message.contains("persistentvolumeclaims ns/contended") && message.contains("conflict"),
            "{message}"
        );
        assert_eq!(
            server.faults_injected()["409 conflict"],
            ATTEMPTS as u64,
            "bounded"
        );
        assert_eq!(finalizers_of(&client, "contended").await.unwrap(), [OURS]);
        server.shutdown().await;
    }
}
