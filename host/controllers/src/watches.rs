//! Watches shared by the controllers: one reflector per watched resource type,
//! started when the first controller subscribes, feeding every subscriber's
//! enqueue rules. A controller that starts late (its API appeared) first sees
//! what the cache already holds, as a handler added to a client-go informer does.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};

use kube::Client;
use rekon_machinery::queue::{QueueKey, WorkQueue};
use tokio::task::{AbortHandle, JoinHandle};

use crate::cache::{Cache, Change, Projection, reflect, reflect_api};
use crate::context::Context;
use crate::projection::Watched;

type Handler<P> = Box<dyn Fn(&Change<P>) + Send + Sync>;

/// The subscribers of one resource type's reflector.
struct Feed<P> {
    handlers: RwLock<Vec<Handler<P>>>,
}

/// A cache a worker waits for before its first reconcile.
pub trait SyncGate: Send + Sync {
    fn is_synced(&self) -> bool;
    fn wait_synced(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

impl<P: Projection> SyncGate for Cache<P> {
    fn is_synced(&self) -> bool {
        Cache::is_synced(self)
    }

    fn wait_synced(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(Cache::wait_synced(self))
    }
}

/// Every running reflector and its subscribers.
pub struct Feeds {
    client: Client,
    ctx: Arc<Context>,
    /// Called on every change of every watched resource (activity tracking).
    on_any: Arc<dyn Fn() + Send + Sync>,
    feeds: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    reflectors: Mutex<Vec<JoinHandle<()>>>,
    gates: Mutex<Vec<Arc<dyn SyncGate>>>,
}

impl Feeds {
    pub fn new(client: Client, ctx: Arc<Context>, on_any: Arc<dyn Fn() + Send + Sync>) -> Self {
        Self {
            client,
            ctx,
            on_any,
            feeds: Mutex::default(),
            reflectors: Mutex::default(),
            gates: Mutex::default(),
        }
    }

    /// Adds `handler` to `P`'s reflector, starting it if it is the first.
    fn subscribe<P: Watched>(&self, handler: Handler<P>) -> Arc<Cache<P>> {
        let cache = P::cache(&self.ctx.caches).clone();
        let feed = {
            let mut feeds = self.feeds.lock().unwrap();
            match feeds.get(&TypeId::of::<P>()) {
                Some(feed) => Arc::clone(feed)
                    .downcast::<Feed<P>>()
                    .expect("feeds are keyed by their type"),
                None => {
                    let feed = Arc::new(Feed::<P> {
                        handlers: RwLock::default(),
                    });
                    feeds.insert(TypeId::of::<P>(), feed.clone());
                    self.start::<P>(feed.clone(), cache.clone());
                    feed
                }
            }
        };
        let mut handlers = feed.handlers.write().unwrap();
        // Listed, not synced: the reflector may be past some of the list's
        // changes already; replaying the whole list misses none (keys dedup).
        if cache.is_listed() {
            for obj in cache.list() {
                handler(&Change::Applied {
                    old: None,
                    new: obj,
                });
            }
        }
        handlers.push(handler);
        cache
    }

    fn start<P: Watched>(&self, feed: Arc<Feed<P>>, cache: Arc<Cache<P>>) {
        let on_any = self.on_any.clone();
        let task = tokio::spawn(reflect(self.client.clone(), cache.clone(), move |change| {
            on_any();
            for handler in feed.handlers.read().unwrap().iter() {
                handler(&change);
            }
        }));
        self.reflectors.lock().unwrap().push(task);
        self.gates.lock().unwrap().push(cache);
    }

    /// Whether every started reflector has listed once.
    pub fn all_synced(&self) -> bool {
        self.gates.lock().unwrap().iter().all(|g| g.is_synced())
    }

    /// Stops the reflectors of a controller that stopped (`reflectors`) and
    /// forgets its caches (`gates`): readiness no longer waits for them.
    pub(crate) fn forget(&self, gates: &[Arc<dyn SyncGate>], reflectors: &[AbortHandle]) {
        reflectors.iter().for_each(AbortHandle::abort);
        self.reflectors
            .lock()
            .unwrap()
            .retain(|task| !task.is_finished());
        let same = |a: &Arc<dyn SyncGate>, b: &Arc<dyn SyncGate>| {
            std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
        };
        self.gates
            .lock()
            .unwrap()
            .retain(|gate| !gates.iter().any(|g| same(g, gate)));
    }

    /// Stops every reflector.
    pub fn stop(&self) {
        for task in self.reflectors.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

/// What one controller watches: given to [`crate::reconciler::Reconciler::watches`].
pub struct Watches<'a, K> {
    feeds: &'a Feeds,
    queue: Arc<WorkQueue<K>>,
    gates: Vec<Arc<dyn SyncGate>>,
    /// The reflectors [`Watches::reflect`] started for this controller alone.
    reflectors: Vec<AbortHandle>,
}

impl<'a, K: QueueKey> Watches<'a, K> {
    pub(crate) fn new(feeds: &'a Feeds, queue: Arc<WorkQueue<K>>) -> Self {
        Self {
            feeds,
            queue,
            gates: Vec::new(),
            reflectors: Vec::new(),
        }
    }

    /// The controller's queue (to enqueue keys outside its watches).
    pub fn queue(&self) -> &Arc<WorkQueue<K>> {
        &self.queue
    }

    /// Watches `P`: every change enqueues the keys `keys` returns. The
    /// controller's workers wait until `P`'s cache has synced.
    pub fn on<P: Watched>(&mut self, keys: impl Fn(&Change<P>) -> Vec<K> + Send + Sync + 'static) {
        let queue = self.queue.clone();
        let cache = self.feeds.subscribe::<P>(Box::new(move |change| {
            for key in keys(change) {
                queue.add(key);
            }
        }));
        self.gates.push(cache);
    }

    /// Watches `api` into a cache of this controller's own (`project`ed
    /// objects, its own indexes): every change enqueues the keys `keys` returns.
    /// The reflector is the host's (stopped at shutdown, counted by readiness);
    /// the controller's workers wait until the cache has synced.
    pub fn reflect<O, P>(
        &mut self,
        api: kube::Api<O>,
        project: impl Fn(&O) -> P + Send + Sync + 'static,
        cache: Arc<Cache<P>>,
        keys: impl Fn(&Change<P>) -> Vec<K> + Send + Sync + 'static,
    ) where
        O: kube::Resource
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug
            + Send
            + Sync
            + 'static,
        P: Projection,
    {
        let queue = self.queue.clone();
        let on_any = self.feeds.on_any.clone();
        let task = tokio::spawn(reflect_api(api, project, cache.clone(), move |change| {
            on_any();
            for key in keys(&change) {
                queue.add(key);
            }
        }));
        self.reflectors.push(task.abort_handle());
        self.feeds.reflectors.lock().unwrap().push(task);
        self.feeds.gates.lock().unwrap().push(cache.clone());
        self.gates.push(cache);
    }

    /// The caches the controller's workers wait for, and the reflectors it
    /// started for itself (stopped with it, see [`Feeds::forget`]).
    pub(crate) fn into_parts(self) -> (Vec<Arc<dyn SyncGate>>, Vec<AbortHandle>) {
        (self.gates, self.reflectors)
    }
}
