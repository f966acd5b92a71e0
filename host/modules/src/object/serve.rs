//! Serving worlds from `DecisionModule` objects: wait until discovery shows
//! the API (the CRD may come after rekon), watch the objects as plain JSON
//! and parse each on its own, and hand them to [`Objects`], which picks one
//! object per world and fetches and applies each off this loop. Every
//! replica fetches, checks and precompiles; only the leader writes statuses.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, ResourceExt};
use tokio::task::JoinHandle;

use crate::manager::Modules;
use crate::object::fetch::Fetcher;
use crate::object::objects::Objects;
use crate::object::resource::DecisionModule;
use crate::object::writer::StatusClient;

/// The API group and version that must be served (discovery) for objects to be watched.
pub const API: &str = "rekon.dev/v1alpha1";

pub struct ObjectOptions {
    /// The client statuses are written with now: the leader's fenced client,
    /// `None` while this replica does not lead.
    pub status_client: StatusClient,
    /// How often statuses are recomputed (shadow counts change without events).
    pub status_interval: Duration,
    /// Wait before fetching again after a transient failure (registry unreachable...).
    pub retry: Duration,
    /// How often discovery is asked again while the server does not serve [`API`].
    pub discovery_interval: Duration,
}

impl ObjectOptions {
    /// Statuses written through `status_client`; the other options at their defaults.
    pub fn new(status_client: StatusClient) -> Self {
        Self {
            status_client,
            status_interval: Duration::from_secs(1),
            retry: Duration::from_secs(10),
            discovery_interval: Duration::from_secs(30),
        }
    }
}

/// Serving stops when this is dropped.
pub struct ServingObjects {
    task: JoinHandle<()>,
}

impl Drop for ServingObjects {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts serving worlds from the `DecisionModule` objects of `client`'s
/// cluster, once (and as soon as) its API server serves them.
pub fn serve(
    modules: Modules,
    client: Client,
    fetcher: Fetcher,
    options: ObjectOptions,
) -> ServingObjects {
    let task = tokio::spawn(async move {
        discover(&client, options.discovery_interval).await;
        let resource = ApiResource::erase::<DecisionModule>(&());
        let api: Api<DynamicObject> = Api::all_with(client, &resource);
        let (mut objects, mut done, mut progress) = Objects::new(
            modules,
            fetcher,
            options.status_client.clone(),
            options.retry,
        );
        let mut events = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut listing: Option<BTreeMap<String, DynamicObject>> = None;
        let mut tick = tokio::time::interval(options.status_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                event = events.next() => match event {
                    None => return,
                    Some(Ok(Event::Apply(o))) => objects.seen(o),
                    Some(Ok(Event::Delete(o))) => objects.gone(&o.name_any()),
                    Some(Ok(Event::Init)) => listing = Some(BTreeMap::new()),
                    Some(Ok(Event::InitApply(o))) => {
                        listing.get_or_insert_with(BTreeMap::new).insert(o.name_any(), o);
                    }
                    Some(Ok(Event::InitDone)) => objects.relisted(listing.take().unwrap_or_default()),
                    Some(Err(err)) => {
                        tracing::warn!(error = %err, "watching DecisionModules; retrying");
                        continue;
                    }
                },
                Some(finished) = done.recv() => objects.finished(finished),
                Some(report) = progress.recv() => objects.progress(report),
                _ = tick.tick() => {}
            }
            if listing.is_none() {
                objects.reconcile().boxed().await;
            }
        }
    });
    ServingObjects { task }
}

/// Waits until the server serves [`API`], asking discovery every `every`
/// (as the host does for a controller's API).
async fn discover(client: &Client, every: Duration) {
    let mut logged = false;
    loop {
        match rekon_controllers::selection::serves(client, API).await {
            Ok(true) => {
                tracing::info!(api = API, "serving worlds from DecisionModule objects");
                return;
            }
            Ok(false) if !logged => {
                tracing::info!(
                    api = API,
                    ?every,
                    "the API server does not serve DecisionModule yet (apply deploy/decisionmodules.yaml); \
                     asking discovery again periodically, meanwhile modules come from --guests only"
                );
                logged = true;
            }
            Ok(false) => {}
            Err(err) => {
                tracing::warn!(api = API, error = %err, "API discovery failed; asking again");
            }
        }
        tokio::time::sleep(every).await;
    }
}
