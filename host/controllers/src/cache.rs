//! A projected, indexed informer cache fed by a kube-runtime watcher.
//!
//! The watcher does the list/watch/re-list dance (including the in-stream 410);
//! this module keeps only the projection of each object, maintains secondary
//! indexes, and turns watcher events into `Change`s for the controllers' event
//! handlers. Objects that vanish across a re-list are reported as deletions of
//! their last known state (client-go's tombstones).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::Notify;

pub use rekon_machinery::ObjectKey;

/// What a cache stores: the projection of one object.
pub trait Projection: Send + Sync + 'static {
    fn key(&self) -> ObjectKey;
    /// `metadata.resourceVersion`: opaque, only ever compared for equality.
    fn resource_version(&self) -> &str;
}

/// A change the cache applied, handed to event handlers after the store is updated.
pub enum Change<P> {
    Applied { old: Option<Arc<P>>, new: Arc<P> },
    Deleted(Arc<P>),
}

type IndexFn<P> = Arc<dyn Fn(&P) -> Vec<String> + Send + Sync>;

struct Index<P> {
    name: String,
    values_of: IndexFn<P>,
    keys_by_value: HashMap<String, HashSet<ObjectKey>>,
}

struct Inner<P> {
    objects: HashMap<ObjectKey, Arc<P>>,
    indexes: Vec<Index<P>>,
}

/// The cache of one resource type.
pub struct Cache<P> {
    inner: RwLock<Inner<P>>,
    /// A full list is stored (its changes may still be on their way to handlers).
    listed: AtomicBool,
    /// The first list is stored and its changes were delivered.
    synced: AtomicBool,
    synced_notify: Notify,
}

impl<P: Projection> Cache<P> {
    pub fn new() -> Self {
        Self {
            inner: RwLock::new(Inner {
                objects: HashMap::new(),
                indexes: Vec::new(),
            }),
            listed: AtomicBool::new(false),
            synced: AtomicBool::new(false),
            synced_notify: Notify::new(),
        }
    }

    /// Adds a secondary index; `values_of` yields the index values of an object.
    pub fn with_index(
        self,
        name: impl Into<String>,
        values_of: impl Fn(&P) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.inner.write().unwrap().indexes.push(Index {
            name: name.into(),
            values_of: Arc::new(values_of),
            keys_by_value: HashMap::new(),
        });
        self
    }

    pub fn get(&self, key: &ObjectKey) -> Option<Arc<P>> {
        self.inner.read().unwrap().objects.get(key).cloned()
    }

    /// Objects whose index `index` yields `value`, sorted by key.
    pub fn by_index(&self, index: &str, value: &str) -> Vec<Arc<P>> {
        let inner = self.inner.read().unwrap();
        let Some(idx) = inner.indexes.iter().find(|i| i.name == index) else {
            panic!("cache has no index named {index:?}");
        };
        let mut keys: Vec<&ObjectKey> = idx
            .keys_by_value
            .get(value)
            .map(|keys| keys.iter().collect())
            .unwrap_or_default();
        keys.sort();
        keys.into_iter()
            .filter_map(|k| inner.objects.get(k).cloned())
            .collect()
    }

    /// How many objects index `index` maps to `value` (no copying).
    pub fn count_by_index(&self, index: &str, value: &str) -> usize {
        let inner = self.inner.read().unwrap();
        let Some(idx) = inner.indexes.iter().find(|i| i.name == index) else {
            panic!("cache has no index named {index:?}");
        };
        idx.keys_by_value.get(value).map_or(0, HashSet::len)
    }

    /// Every object, sorted by key.
    pub fn list(&self) -> Vec<Arc<P>> {
        let inner = self.inner.read().unwrap();
        let mut all: Vec<_> = inner.objects.iter().collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        all.into_iter().map(|(_, v)| v.clone()).collect()
    }

    pub fn len(&self) -> usize {
        self.inner.read().unwrap().objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a full list is stored, delivered or not.
    pub fn is_listed(&self) -> bool {
        self.listed.load(Ordering::Acquire)
    }

    /// Whether the first full list is stored and its changes were delivered.
    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Called once a list's changes reached every handler: only then may a
    /// worker start or the host report idle (their keys are queued by now).
    pub fn mark_synced(&self) {
        self.synced.store(true, Ordering::Release);
        self.synced_notify.notify_waiters();
    }

    /// Waits until the first full list has been applied and delivered.
    pub async fn wait_synced(&self) {
        loop {
            let notified = self.synced_notify.notified();
            if self.is_synced() {
                return;
            }
            notified.await;
        }
    }

    /// Inserts or replaces one object; returns the previous state.
    pub fn apply(&self, obj: P) -> Change<P> {
        let new = Arc::new(obj);
        let key = new.key();
        let mut inner = self.inner.write().unwrap();
        let old = inner.objects.insert(key.clone(), new.clone());
        if let Some(old) = &old {
            inner.unindex(&key, old);
        }
        inner.index(&key, &new);
        Change::Applied { old, new }
    }

    /// Records the object a write of ours returned, if the cache still holds the
    /// version the write was conditioned on (`written_over`). resourceVersions are
    /// opaque: a cache that moved on (the watch delivered this write or a later
    /// one) is left alone, and an object no longer cached is never resurrected.
    /// No change is reported: the watch event for the write follows as usual.
    pub fn apply_own_write(&self, obj: P, written_over: &str) {
        let key = obj.key();
        let mut inner = self.inner.write().unwrap();
        match inner.objects.get(&key) {
            Some(cached) if cached.resource_version() == written_over => {}
            _ => return,
        }
        let new = Arc::new(obj);
        if let Some(old) = inner.objects.insert(key.clone(), new.clone()) {
            inner.unindex(&key, &old);
        }
        inner.index(&key, &new);
    }

    /// Removes one object; `None` if it was not cached.
    pub fn delete(&self, key: &ObjectKey) -> Option<Change<P>> {
        let mut inner = self.inner.write().unwrap();
        let old = inner.objects.remove(key)?;
        inner.unindex(key, &old);
        Some(Change::Deleted(old))
    }

    /// Replaces the whole content after a (re-)list in one atomic swap (as
    /// kube-runtime's reflector does): readers see the old store or the new one,
    /// never a mix. Objects not listed again are reported deleted with their last
    /// known state.
    pub fn replace(&self, objs: Vec<P>) -> Vec<Change<P>> {
        let mut changes = Vec::with_capacity(objs.len());
        {
            let mut inner = self.inner.write().unwrap();
            let mut previous = std::mem::take(&mut inner.objects);
            for idx in &mut inner.indexes {
                idx.keys_by_value.clear();
            }
            for obj in objs {
                let new = Arc::new(obj);
                let key = new.key();
                inner.index(&key, &new);
                let old = previous.remove(&key);
                inner.objects.insert(key, new.clone());
                changes.push(Change::Applied { old, new });
            }
            changes.extend(previous.into_values().map(Change::Deleted));
            self.listed.store(true, Ordering::Release);
        }
        changes
    }
}

impl<P: Projection> Default for Cache<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P> Inner<P> {
    fn index(&mut self, key: &ObjectKey, obj: &P) {
        for idx in &mut self.indexes {
            for value in (idx.values_of)(obj) {
                idx.keys_by_value
                    .entry(value)
                    .or_default()
                    .insert(key.clone());
            }
        }
    }

    fn unindex(&mut self, key: &ObjectKey, obj: &P) {
        for idx in &mut self.indexes {
            for value in (idx.values_of)(obj) {
                if let Some(keys) = idx.keys_by_value.get_mut(&value) {
                    keys.remove(key);
                    if keys.is_empty() {
                        idx.keys_by_value.remove(&value);
                    }
                }
            }
        }
    }
}

/// A resource a [`Cache`] can be fed from: the API type and its projection.
pub trait Reflected: Projection + Sized {
    type Object: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static;
    fn project(obj: &Self::Object) -> Self;
}

/// Feeds `P`'s cache from a watch of every `P::Object` until the stream ends
/// (never, unless the task is aborted), passing every change to `on_change`.
pub async fn reflect<P, H>(client: Client, cache: Arc<Cache<P>>, on_change: H)
where
    P: Reflected,
    H: Fn(Change<P>),
{
    reflect_api(Api::<P::Object>::all(client), P::project, cache, on_change).await
}

/// Feeds `cache` with `project`ed objects of a watch on `api` (any resource,
/// typed or dynamic) until the stream ends, passing every change to `on_change`.
pub async fn reflect_api<K, P, H>(
    api: Api<K>,
    project: impl Fn(&K) -> P,
    cache: Arc<Cache<P>>,
    on_change: H,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    P: Projection,
    H: Fn(Change<P>),
{
    let mut relist: Option<Vec<P>> = None;
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            Err(err) => {
                // The backoff re-lists; nothing to do but say so.
                tracing::warn!(error = %err, "watch failed; retrying with backoff");
                continue;
            }
        };
        match event {
            watcher::Event::Init => relist = Some(Vec::new()),
            watcher::Event::InitApply(obj) => {
                relist.get_or_insert_with(Vec::new).push(project(&obj));
            }
            watcher::Event::InitDone => {
                for change in cache.replace(relist.take().unwrap_or_default()) {
                    on_change(change);
                }
                cache.mark_synced();
            }
            watcher::Event::Apply(obj) => on_change(cache.apply(project(&obj))),
            watcher::Event::Delete(obj) => {
                let projected = project(&obj);
                match cache.delete(&projected.key()) {
                    Some(change) => on_change(change),
                    None => on_change(Change::Deleted(Arc::new(projected))),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Obj {
        ns: &'static str,
        name: &'static str,
        tag: &'static str,
    }

    impl Projection for Obj {
        fn key(&self) -> ObjectKey {
            ObjectKey::new(self.ns, self.name)
        }
        fn resource_version(&self) -> &str {
            self.tag
        }
    }

    fn by_tag(o: &Obj) -> Vec<String> {
        vec![format!("{}/{}", o.ns, o.tag)]
    }

    fn obj(name: &'static str, tag: &'static str) -> Obj {
        Obj {
            ns: "ns",
            name,
            tag,
        }
    }

    #[test]
    fn index_follows_updates_and_deletes() {
        let cache = Cache::new().with_index("tag", by_tag);
        cache.apply(obj("a", "x"));
        cache.apply(obj("b", "x"));
        assert_eq!(cache.by_index("tag", "ns/x").len(), 2);
        cache.apply(obj("a", "y"));
        assert_eq!(cache.by_index("tag", "ns/x")[0].name, "b");
        assert_eq!(cache.by_index("tag", "ns/y")[0].name, "a");
        cache.delete(&ObjectKey::new("ns", "b"));
        assert!(cache.by_index("tag", "ns/x").is_empty());
    }

    #[test]
    fn apply_reports_the_old_state() {
        let cache = Cache::new();
        assert!(matches!(
            cache.apply(obj("a", "x")),
            Change::Applied { old: None, .. }
        ));
        match cache.apply(obj("a", "y")) {
            Change::Applied {
                old: Some(old),
                new,
            } => {
                assert_eq!((old.tag, new.tag), ("x", "y"));
            }
            _ => panic!("expected an update"),
        }
    }

    #[test]
    fn relist_reports_vanished_objects_as_deleted_with_last_state() {
        let cache = Cache::new().with_index("tag", by_tag);
        cache.apply(obj("a", "x"));
        cache.apply(obj("gone", "z"));
        assert!(!cache.is_synced());
        let changes = cache.replace(vec![obj("a", "x2")]);
        assert!(cache.is_listed() && !cache.is_synced(), "not delivered yet");
        let deleted: Vec<_> = changes
            .iter()
            .filter_map(|c| match c {
                Change::Deleted(o) => Some(o.name),
                _ => None,
            })
            .collect();
        assert_eq!(deleted, vec!["gone"]);
        assert!(cache.by_index("tag", "ns/z").is_empty());
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn own_writes_apply_only_over_the_version_they_were_conditioned_on() {
        let cache = Cache::new().with_index("tag", by_tag);
        cache.apply(obj("a", "v5"));
        cache.apply_own_write(obj("a", "v6"), "v4");
        assert_eq!(
            cache.get(&ObjectKey::new("ns", "a")).unwrap().tag,
            "v5",
            "the cache moved on: keep it"
        );
        cache.apply_own_write(obj("a", "v6"), "v5");
        assert_eq!(cache.get(&ObjectKey::new("ns", "a")).unwrap().tag, "v6");
        assert_eq!(cache.by_index("tag", "ns/v6").len(), 1);
        assert!(cache.by_index("tag", "ns/v5").is_empty());
        cache.apply_own_write(obj("gone", "v9"), "v8");
        assert!(
            cache.get(&ObjectKey::new("ns", "gone")).is_none(),
            "a write never resurrects"
        );
    }

    #[test]
    fn a_relist_swaps_the_store_and_indexes_at_once() {
        let cache = Cache::new().with_index("tag", by_tag);
        cache.apply(obj("a", "x"));
        cache.apply(obj("b", "x"));
        let changes = cache.replace(vec![obj("b", "y"), obj("c", "x")]);
        assert_eq!(changes.len(), 3);
        assert_eq!(cache.count_by_index("tag", "ns/x"), 1);
        assert_eq!(cache.count_by_index("tag", "ns/y"), 1);
        assert!(matches!(&changes[0], Change::Applied { old: Some(old), .. } if old.tag == "x"));
        assert!(matches!(&changes[1], Change::Applied { old: None, .. }));
        assert!(matches!(&changes[2], Change::Deleted(old) if old.name == "a"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cache_is_synced_only_once_its_initial_list_reached_the_handler() {
        use rekon_apiserver::{ApiServer, ServerConfig};
        use serde_json::json;
        use std::sync::atomic::AtomicUsize;
        const N: usize = 300;
        let server = ApiServer::start(ServerConfig::new(), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let mut objects =
            vec![json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})];
        objects.extend((0..N).map(|i| {
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                   "metadata": {"namespace": "ns", "name": format!("pvc-{i}")}, "spec": {}})
        }));
        server.store().load_objects(objects).unwrap();
        let client = Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();
        let cache = Arc::new(Cache::<crate::projection::CachedPvc>::new());
        let delivered = Arc::new(AtomicUsize::new(0));
        // A slow handler (enqueue rules over a large list take time).
        let handler = {
            let delivered = delivered.clone();
            move |_: Change<crate::projection::CachedPvc>| {
                std::thread::sleep(std::time::Duration::from_millis(1));
                delivered.fetch_add(1, Ordering::AcqRel);
            }
        };
        let reflector = tokio::spawn(reflect(client, cache.clone(), handler));
        tokio::time::timeout(std::time::Duration::from_secs(20), cache.wait_synced())
            .await
            .expect("the cache syncs");
        assert_eq!(
            delivered.load(Ordering::Acquire),
            N,
            "synced before the initial list reached the handler"
        );
        reflector.abort();
        server.shutdown().await;
    }
}
