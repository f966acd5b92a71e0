//! Object storage: objects keyed by (resource, namespace, name), one global resourceVersion
//! counter shared by every kind (row 1), and the bounded event history watches read (rows 16, 19).
//! The history is bounded by event count and by the bytes its objects take, so a few large
//! objects written often cannot hold gigabytes of old versions. Objects are kept as compact
//! JSON ([`Stored`]), shared between the current state and the history, so those bytes are
//! the memory the history holds; an owner index by uid serves the garbage collector.

use std::collections::{BTreeMap, VecDeque};
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::conversion;
use crate::meta;
use crate::owners::OwnerIndex;
use crate::resources::ResourceId;
use crate::stored::{Ownership, Stored};

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub resource: ResourceId,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(resource: ResourceId, namespace: &str, name: &str) -> Self {
        ObjectKey {
            resource,
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The key the object is stored under (its storage resource).
    fn stored(&self) -> ObjectKey {
        ObjectKey::new(self.resource.storage(), &self.namespace, &self.name)
    }

    /// This key addressed through `resource` (which shares its storage).
    fn served_as(&self, resource: ResourceId) -> ObjectKey {
        ObjectKey::new(resource, &self.namespace, &self.name)
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let info = self.resource.info();
        if self.namespace.is_empty() {
            write!(f, "{} {}", info.qualified(), self.name)
        } else {
            write!(f, "{} {}/{}", info.qualified(), self.namespace, self.name)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One committed change.
#[derive(Debug)]
pub struct WatchEvent {
    pub rv: u64,
    pub key: ObjectKey,
    pub event_type: EventType,
    /// The object as watchers see it: the new state, or for DELETED the last stored state
    /// carrying the delete's resourceVersion.
    pub object: Stored,
    /// The stored state before this change (None for ADDED); selectors are applied to it too,
    /// and consistent list pages rebuild older states from it.
    pub previous: Option<Stored>,
    pub at: Instant,
    /// Serialized size of `object` and `previous`, what the history's byte bound counts.
    pub bytes: usize,
}

impl WatchEvent {
    /// The change is to an object of `resource`'s storage (in `namespace`, if given).
    pub fn concerns(&self, resource: ResourceId, namespace: Option<&str>) -> bool {
        self.key.resource == resource.storage()
            && namespace.is_none_or(|ns| self.key.namespace == ns)
    }

    /// (object, previous) in the shape of `resource`.
    pub fn served_as(&self, resource: ResourceId) -> (Value, Option<Value>) {
        (
            conversion::from_storage(resource, self.object.decode()),
            self.previous
                .as_ref()
                .map(|p| conversion::from_storage(resource, p.decode())),
        )
    }
}

/// The watch history no longer covers the requested resourceVersion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooOld {
    pub requested: u64,
    /// Oldest resourceVersion a watch can still start from.
    pub floor: u64,
}

#[derive(Debug)]
pub struct Objects {
    objects: BTreeMap<ObjectKey, Stored>,
    rv: u64,
    history: VecDeque<Arc<WatchEvent>>,
    /// A watch from resourceVersion N is served iff N >= floor: every event after the floor is
    /// still in the history.
    floor: u64,
    limits: HistoryLimits,
    /// Sum of `bytes` over the history.
    history_bytes: usize,
    owners: OwnerIndex,
}

/// How much watch history is kept; the oldest events go first. The newest event is always
/// kept, however large, so a big write does not expire every watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    pub events: usize,
    pub bytes: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits {
            events: 10_000,
            bytes: 64 << 20,
        }
    }
}

impl Objects {
    pub fn new(limits: HistoryLimits) -> Self {
        Objects {
            objects: BTreeMap::new(),
            rv: 0,
            history: VecDeque::new(),
            floor: 0,
            limits,
            history_bytes: 0,
            owners: OwnerIndex::default(),
        }
    }

    /// Serialized bytes of the objects the watch history holds.
    pub fn history_bytes(&self) -> usize {
        self.history_bytes
    }

    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// The object in the shape of `key.resource`.
    pub fn get(&self, key: &ObjectKey) -> Option<Value> {
        let stored = self.objects.get(&key.stored())?;
        Some(conversion::from_storage(key.resource, stored.decode()))
    }

    /// Objects of one resource (in one namespace, if given) in its shape, sorted by namespace
    /// and name.
    pub fn iter_resource(
        &self,
        resource: ResourceId,
        namespace: Option<&str>,
    ) -> impl Iterator<Item = (ObjectKey, Value)> {
        let storage = resource.storage();
        let start = ObjectKey::new(storage, namespace.unwrap_or(""), "");
        self.objects
            .range(start..)
            .take_while(move |(k, _)| {
                k.resource == storage && namespace.is_none_or(|ns| k.namespace == ns)
            })
            .map(move |(k, v)| {
                (
                    k.served_as(resource),
                    conversion::from_storage(resource, v.decode()),
                )
            })
    }

    /// Objects of a storage resource (in one namespace, if given) as stored (decode what
    /// a scan keeps).
    pub fn iter_stored(
        &self,
        storage: ResourceId,
        namespace: Option<&str>,
    ) -> impl Iterator<Item = (&ObjectKey, &Stored)> {
        let start = ObjectKey::new(storage, namespace.unwrap_or(""), "");
        self.objects.range(start..).take_while(move |(k, _)| {
            k.resource == storage && namespace.is_none_or(|ns| k.namespace == ns)
        })
    }

    /// A stored object by its key in storage form.
    pub fn get_stored(&self, key: &ObjectKey) -> Option<&Stored> {
        self.objects.get(key)
    }

    /// The key (in storage form) of the stored object with this uid.
    pub fn key_by_uid(&self, uid: &str) -> Option<&ObjectKey> {
        self.owners.key_of(uid)
    }

    /// The stored objects whose ownerReferences name `uid`.
    pub fn dependents_of(&self, uid: &str) -> impl Iterator<Item = (&ObjectKey, &Stored)> {
        self.owners
            .dependents_of(uid)
            .filter_map(|key| Some((key, self.objects.get(key)?)))
    }

    /// Every stored object in `namespace`, of any resource, as stored: one range per resource
    /// stored, not a scan of every object.
    pub fn iter_namespace<'a>(
        &'a self,
        namespace: &'a str,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Stored)> + 'a {
        let mut resource = self.objects.keys().next().map(|k| k.resource);
        std::iter::from_fn(move || {
            let current = resource?;
            // Namespace names are DNS labels: this sorts after every key of `current`.
            let past = ObjectKey::new(current, "\u{10FFFF}", "");
            resource = self.objects.range(past..).next().map(|(k, _)| k.resource);
            Some(self.iter_stored(current, Some(namespace)))
        })
        .flatten()
    }

    /// Every stored object, in its storage shape.
    pub fn iter_all(&self) -> impl Iterator<Item = (&ObjectKey, &Stored)> {
        self.objects.iter()
    }

    /// Stores `object` (in the shape of `key.resource`) under a new resourceVersion and records
    /// the event; returns the stored object in that shape.
    pub fn put(&mut self, key: ObjectKey, object: Value) -> Value {
        let resource = key.resource;
        let key = key.stored();
        let mut object = conversion::to_storage(resource, object);
        self.rv += 1;
        meta::set_resource_version(&mut object, self.rv);
        let stored = Stored::encode(&object);
        let previous = self.objects.insert(key.clone(), stored.clone());
        self.owners.update(
            &key,
            previous.as_ref().map(Stored::ownership).as_ref(),
            Some(&Ownership::of(&object)),
        );
        let event_type = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.record(key, event_type, stored, previous);
        conversion::from_storage(resource, object)
    }

    /// Removes the object; the DELETED event carries its last state with a new resourceVersion.
    /// Returns the stored state as it was before the delete.
    pub fn remove(&mut self, key: &ObjectKey) -> Option<Value> {
        let resource = key.resource;
        let key = &key.stored();
        let stored = self.objects.remove(key)?;
        self.owners.update(key, Some(&stored.ownership()), None);
        self.rv += 1;
        let last = stored.decode();
        let mut tombstone = last.clone();
        meta::set_resource_version(&mut tombstone, self.rv);
        self.record(
            key.clone(),
            EventType::Deleted,
            Stored::encode(&tombstone),
            Some(stored),
        );
        Some(conversion::from_storage(resource, last))
    }

    fn record(
        &mut self,
        key: ObjectKey,
        event_type: EventType,
        object: Stored,
        previous: Option<Stored>,
    ) {
        let bytes = object.len() + previous.as_ref().map_or(0, Stored::len);
        self.history.push_back(Arc::new(WatchEvent {
            rv: self.rv,
            key,
            event_type,
            object,
            previous,
            at: Instant::now(),
            bytes,
        }));
        self.history_bytes += bytes;
        while self.history.len() > 1
            && (self.history.len() > self.limits.events || self.history_bytes > self.limits.bytes)
        {
            if let Some(dropped) = self.history.pop_front() {
                self.floor = dropped.rv;
                self.history_bytes -= dropped.bytes;
            }
        }
    }

    /// Every event with a resourceVersion above `rv`, oldest first; keys and objects are in
    /// storage form (see `WatchEvent::served_as`).
    pub fn events_since(&self, rv: u64) -> Result<Vec<Arc<WatchEvent>>, TooOld> {
        if rv < self.floor {
            return Err(TooOld {
                requested: rv,
                floor: self.floor,
            });
        }
        let start = self.history.partition_point(|e| e.rv <= rv);
        Ok(self.history.range(start..).cloned().collect())
    }

    /// Forgets the history: watches and continue tokens from before now expire (410).
    pub fn compact(&mut self) {
        self.history.clear();
        self.history_bytes = 0;
        self.floor = self.rv;
    }

    /// Objects of `resource` (in one namespace, if given) in its shape, sorted by namespace
    /// and name, starting after `after` (namespace, name): as they are now, or with `at` as
    /// they were at that resourceVersion (newer events undone: consistent list pages,
    /// `resourceVersionMatch=Exact`). Lazy: an object is copied only when the iterator
    /// reaches it, so a list page costs its own objects, not the whole collection.
    pub fn list_at<'a>(
        &'a self,
        resource: ResourceId,
        namespace: Option<&'a str>,
        at: Option<u64>,
        after: Option<(&str, &str)>,
    ) -> Result<impl Iterator<Item = (ObjectKey, Value)> + 'a, TooOld> {
        let storage = resource.storage();
        let start = match after {
            Some((ns, name)) => Bound::Excluded(ObjectKey::new(storage, ns, name)),
            None => Bound::Included(ObjectKey::new(storage, namespace.unwrap_or(""), "")),
        };
        let in_scope = move |k: &ObjectKey| {
            k.resource == storage && namespace.is_none_or(|ns| k.namespace == ns)
        };
        // Each key changed since `at`: its state then (None: it did not exist).
        let mut then: BTreeMap<&ObjectKey, Option<&Stored>> = BTreeMap::new();
        if let Some(rv) = at {
            if rv < self.floor {
                return Err(TooOld {
                    requested: rv,
                    floor: self.floor,
                });
            }
            let first = self.history.partition_point(|e| e.rv <= rv);
            // Newest first, so the oldest change of a key has the last word.
            for event in self.history.range(first..).rev() {
                if in_scope(&event.key) && (start.as_ref(), Bound::Unbounded).contains(&event.key) {
                    then.insert(&event.key, event.previous.as_ref());
                }
            }
        }
        let now = self
            .objects
            .range((start, Bound::Unbounded))
            .take_while(move |(k, _)| in_scope(k));
        Ok(Overlay {
            now: now.peekable(),
            then: then.into_iter().peekable(),
        }
        .map(move |(k, v)| {
            (
                k.served_as(resource),
                conversion::from_storage(resource, v.decode()),
            )
        }))
    }
}

/// Two key-sorted sequences merged: the current objects, and older states that replace
/// (or, when `None`, remove) the current object of the same key.
struct Overlay<N: Iterator, T: Iterator> {
    now: std::iter::Peekable<N>,
    then: std::iter::Peekable<T>,
}

impl<'a, N, T> Iterator for Overlay<N, T>
where
    N: Iterator<Item = (&'a ObjectKey, &'a Stored)>,
    T: Iterator<Item = (&'a ObjectKey, Option<&'a Stored>)>,
{
    type Item = (&'a ObjectKey, &'a Stored);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let older = match (self.now.peek(), self.then.peek()) {
                (None, None) => return None,
                (Some((now, _)), Some((then, _))) if now < then => false,
                (Some(_), None) => false,
                (Some((now, _)), Some((then, _))) if now == then => {
                    self.now.next();
                    true
                }
                _ => true,
            };
            if !older {
                return self.now.next();
            }
            if let Some((key, Some(value))) = self.then.next() {
                return Some((key, value));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources;
    use serde_json::json;

    fn events(events: usize) -> HistoryLimits {
        HistoryLimits {
            events,
            ..HistoryLimits::default()
        }
    }

    fn cm(name: &str, v: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "d"}, "data": {"v": v}})
    }

    #[test]
    fn one_global_counter_and_ordered_events() {
        let cms = resources::by_plural("", "configmaps").unwrap();
        let mut objs = Objects::new(events(100));
        let k = ObjectKey::new(cms, "d", "a");
        objs.put(k.clone(), cm("a", "1"));
        objs.put(k.clone(), cm("a", "2"));
        objs.remove(&k);
        let events = objs.events_since(0).unwrap();
        let kinds: Vec<_> = events.iter().map(|e| (e.rv, e.event_type)).collect();
        assert_eq!(
            kinds,
            vec![
                (1, EventType::Added),
                (2, EventType::Modified),
                (3, EventType::Deleted)
            ]
        );
        let deleted = events[2].object.decode();
        assert_eq!(deleted["metadata"]["resourceVersion"], "3");
        assert_eq!(deleted["data"]["v"], "2");
    }

    #[test]
    fn bounded_history_expires_old_watches() {
        let cms = resources::by_plural("", "configmaps").unwrap();
        let mut objs = Objects::new(events(2));
        for i in 0..5 {
            objs.put(ObjectKey::new(cms, "d", &format!("c{i}")), cm("c", "x"));
        }
        assert_eq!(
            objs.events_since(2).unwrap_err(),
            TooOld {
                requested: 2,
                floor: 3
            }
        );
        assert_eq!(objs.events_since(3).unwrap().len(), 2);
        objs.compact();
        assert!(objs.events_since(4).is_err());
        assert!(objs.events_since(5).unwrap().is_empty());
    }

    #[test]
    fn history_is_bounded_by_bytes() {
        let cms = resources::by_plural("", "configmaps").unwrap();
        let limit = 8 << 20;
        let mut objs = Objects::new(HistoryLimits {
            events: 10_000,
            bytes: limit,
        });
        let big = "x".repeat(1_900_000);
        let key = ObjectKey::new(cms, "d", "big");
        objs.put(key.clone(), cm("big", &big));
        let first = objs.current_rv();
        for i in 0..20 {
            let mut obj = cm("big", &big);
            obj["metadata"]["labels"] = json!({"i": i.to_string()});
            objs.put(key.clone(), obj);
        }
        // Each event holds two ~1.9 MB versions: two of them fit in 8 MiB.
        assert!(objs.history_bytes() <= limit, "{}", objs.history_bytes());
        assert_eq!(objs.events_since(objs.current_rv() - 2).unwrap().len(), 2);
        assert!(
            objs.events_since(first).is_err(),
            "old starts are compacted"
        );
        // A single event over the bound is kept: watchers that are caught up stay valid.
        let mut tiny = Objects::new(HistoryLimits {
            events: 10,
            bytes: 1,
        });
        tiny.put(key.clone(), cm("big", "v"));
        assert_eq!(tiny.events_since(0).unwrap().len(), 1);
    }

    #[test]
    fn list_at_undoes_newer_events_lazily_after_a_key() {
        let cms = resources::by_plural("", "configmaps").unwrap();
        let mut objs = Objects::new(events(100));
        let a = ObjectKey::new(cms, "d", "a");
        let b = ObjectKey::new(cms, "d", "b");
        objs.put(a.clone(), cm("a", "1"));
        objs.put(a.clone(), cm("a", "2"));
        objs.put(b.clone(), cm("b", "1"));
        objs.remove(&a);
        let c = ObjectKey::new(cms, "d", "c");
        objs.put(c.clone(), cm("c", "1"));
        objs.put(c.clone(), cm("c", "2"));
        let at = |rv, after| -> Vec<(String, Value)> {
            objs.list_at(cms, Some("d"), rv, after)
                .unwrap()
                .map(|(k, v)| (k.name, v["data"]["v"].clone()))
                .collect()
        };
        // rv 2: a at its second version; b and c did not exist yet.
        assert_eq!(at(Some(2), None), vec![("a".to_string(), json!("2"))]);
        assert_eq!(
            objs.list_at(cms, None, Some(2), None)
                .unwrap()
                .next()
                .unwrap()
                .1["metadata"]["resourceVersion"],
            "2"
        );
        // rv 5: a deleted, b and c's first version; now: c's second.
        assert_eq!(
            at(Some(5), None),
            vec![("b".to_string(), json!("1")), ("c".to_string(), json!("1"))]
        );
        assert_eq!(
            at(Some(5), Some(("d", "b"))),
            vec![("c".to_string(), json!("1"))]
        );
        assert_eq!(
            at(None, None),
            vec![("b".to_string(), json!("1")), ("c".to_string(), json!("2"))]
        );
        assert_eq!(at(None, Some(("d", "c"))), vec![]);
    }
}
