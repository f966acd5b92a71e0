//! A mutation cache over an informer (upstream-behaviour §6).
//!
//! After a write, the controller remembers the object the API server returned, so
//! its next reads see the write even though the informer has not delivered it yet
//! (the DRA controller's defence against creating a claim twice). Entries live in a
//! bounded LRU with a TTL, and the informer copy wins as soon as it is at least as
//! new. Beyond the classic cache, deletes evict matching entries and leave a
//! tombstone, so a created-then-deleted object stops being returned at once instead
//! of lingering until the TTL.
//!
//! The cache is not synchronised itself; wrap it in a `Mutex` to share it.

use std::collections::HashSet;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lru::LruCache;
use rekon_guest::model;

/// What the cache needs to know about an object.
pub trait Versioned {
    fn namespace(&self) -> &str;
    fn name(&self) -> &str;
    fn uid(&self) -> &str;
    fn resource_version(&self) -> &str;

    /// `namespace/name`, the cache key.
    fn cache_key(&self) -> String {
        format!("{}/{}", self.namespace(), self.name())
    }
}

impl<T: Versioned + ?Sized> Versioned for Arc<T> {
    fn namespace(&self) -> &str {
        (**self).namespace()
    }
    fn name(&self) -> &str {
        (**self).name()
    }
    fn uid(&self) -> &str {
        (**self).uid()
    }
    fn resource_version(&self) -> &str {
        (**self).resource_version()
    }
}

macro_rules! versioned_by_meta {
    ($($ty:ty),*) => {$(
        impl Versioned for $ty {
            fn namespace(&self) -> &str { &self.meta.namespace }
            fn name(&self) -> &str { &self.meta.name }
            fn uid(&self) -> &str { &self.meta.uid }
            fn resource_version(&self) -> &str { &self.meta.resource_version }
        }
    )*};
}
versioned_by_meta!(
    model::Pod,
    model::Pvc,
    model::ResourceClaim,
    model::ResourceClaimTemplate
);

/// Resource versions compare as integers (what client-go does for this cache);
/// an unparsable one cannot be ordered.
fn parse_rv<T: Versioned + ?Sized>(obj: &T) -> Option<u64> {
    obj.resource_version().parse().ok()
}

/// Where "now" comes from; injectable so TTL tests need no sleeping.
pub trait Clock: Send + Sync {
    fn now(&self) -> Instant;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that moves only when told to.
pub struct ManualClock(Mutex<Instant>);

impl ManualClock {
    pub fn new() -> Self {
        Self(Mutex::new(Instant::now()))
    }

    pub fn advance(&self, by: Duration) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) += by;
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MutationCacheConfig {
    /// LRU bound on remembered mutations (and, separately, on tombstones).
    pub capacity: NonZeroUsize,
    /// How long a mutation (or tombstone) is remembered.
    pub ttl: Duration,
    /// Return mutations the informer does not have at all (just-created objects).
    pub include_adds: bool,
}

impl Default for MutationCacheConfig {
    /// The DRA controller's settings: 100 entries, 1 h, include adds.
    fn default() -> Self {
        Self {
            capacity: NonZeroUsize::new(100).expect("non-zero"),
            ttl: Duration::from_secs(3600),
            include_adds: true,
        }
    }
}

struct Mutation<T> {
    object: T,
    rv: u64,
    expires: Instant,
}

/// The last state of a deleted object, to refuse late mutations of it.
struct Tombstone {
    uid: String,
    rv: u64,
    expires: Instant,
}

pub struct MutationCache<T> {
    config: MutationCacheConfig,
    clock: Arc<dyn Clock>,
    mutations: LruCache<String, Mutation<T>>,
    tombstones: LruCache<String, Tombstone>,
}

impl<T: Versioned + Clone> Default for MutationCache<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Versioned + Clone> MutationCache<T> {
    /// The DRA controller's settings ([`MutationCacheConfig::default`]).
    pub fn new() -> Self {
        Self::with_config(MutationCacheConfig::default())
    }

    pub fn with_config(config: MutationCacheConfig) -> Self {
        Self {
            mutations: LruCache::new(config.capacity),
            tombstones: LruCache::new(config.capacity),
            config,
            clock: Arc::new(SystemClock),
        }
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Remember the object a write returned. Ignored (returns false) when a newer
    /// mutation of the key is remembered, when the object was deleted since (same
    /// UID, or a resourceVersion not newer than the deletion), or when its
    /// resourceVersion is not a number.
    pub fn mutation(&mut self, object: T) -> bool {
        let Some(rv) = parse_rv(&object) else {
            return false;
        };
        let key = object.cache_key();
        let now = self.clock.now();
        if let Some(tomb) = self.live_tombstone(&key, now)
            && (tomb.uid == object.uid() || rv <= tomb.rv)
        {
            return false;
        }
        if self.live_mutation(&key, now).is_some_and(|m| m.rv > rv) {
            return false;
        }
        let expires = now + self.config.ttl;
        self.mutations.put(
            key,
            Mutation {
                object,
                rv,
                expires,
            },
        );
        true
    }

    /// The newer of the informer's copy (`backing`) and the remembered mutation.
    /// Without a backing copy, the mutation only with include-adds. A backing copy
    /// at least as new evicts the mutation.
    pub fn get(&mut self, key: &str, backing: Option<T>) -> Option<T> {
        match backing {
            Some(backing) => Some(self.newer(key, backing)),
            None if self.config.include_adds => {
                let now = self.clock.now();
                self.live_mutation(key, now).map(|m| m.object.clone())
            }
            None => None,
        }
    }

    /// An index query: `backing` is the informer's answer (each object replaced by a
    /// newer mutation); with include-adds, remembered mutations the informer does not
    /// have and that satisfy `matches` follow, sorted by key.
    pub fn by_index<I, F>(&mut self, backing: I, matches: F) -> Vec<T>
    where
        I: IntoIterator<Item = T>,
        F: Fn(&T) -> bool,
    {
        let mut seen = HashSet::new();
        let mut out: Vec<T> = backing
            .into_iter()
            .map(|obj| {
                let key = obj.cache_key();
                let newer = self.newer(&key, obj);
                seen.insert(key);
                newer
            })
            .collect();
        if self.config.include_adds {
            self.purge_expired();
            let mut adds: Vec<(&String, &T)> = self
                .mutations
                .iter()
                .filter(|(key, m)| !seen.contains(*key) && matches(&m.object))
                .map(|(key, m)| (key, &m.object))
                .collect();
            adds.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.extend(adds.into_iter().map(|(_, obj)| obj.clone()));
        }
        out
    }

    /// The informer delivered `object`: a mutation that is not newer is redundant.
    pub fn on_add_or_update(&mut self, object: &T) {
        let key = object.cache_key();
        if let (Some(rv), Some(m)) = (parse_rv(object), self.mutations.peek(&key))
            && rv >= m.rv
        {
            self.mutations.pop(&key);
        }
    }

    /// The informer saw `object` deleted (last known state): evict a mutation of the
    /// same object (same UID, or not newer than the deletion) and remember the
    /// deletion so late mutations of it are refused.
    pub fn on_delete(&mut self, object: &T) {
        let key = object.cache_key();
        let rv = parse_rv(object);
        if let Some(m) = self.mutations.peek(&key)
            && (m.object.uid() == object.uid() || rv.is_some_and(|rv| m.rv <= rv))
        {
            self.mutations.pop(&key);
        }
        let expires = self.clock.now() + self.config.ttl;
        self.tombstones.put(
            key,
            Tombstone {
                uid: object.uid().to_owned(),
                rv: rv.unwrap_or(0),
                expires,
            },
        );
    }

    /// Live (unexpired) remembered mutations.
    pub fn len(&mut self) -> usize {
        self.purge_expired();
        self.mutations.len()
    }

    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    fn newer(&mut self, key: &str, backing: T) -> T {
        let now = self.clock.now();
        let Some(m) = self.live_mutation(key, now) else {
            return backing;
        };
        match parse_rv(&backing) {
            Some(backing_rv) if m.rv > backing_rv => m.object.clone(),
            Some(_) => {
                self.mutations.pop(key);
                backing
            }
            // Cannot order: trust the informer, keep the entry.
            None => backing,
        }
    }

    fn live_mutation(&mut self, key: &str, now: Instant) -> Option<&Mutation<T>> {
        if self.mutations.peek(key).is_some_and(|m| m.expires <= now) {
            self.mutations.pop(key);
        }
        self.mutations.peek(key)
    }

    fn live_tombstone(&mut self, key: &str, now: Instant) -> Option<&Tombstone> {
        if self.tombstones.peek(key).is_some_and(|t| t.expires <= now) {
            self.tombstones.pop(key);
        }
        self.tombstones.peek(key)
    }

    fn purge_expired(&mut self) {
        let now = self.clock.now();
        let expired: Vec<String> = self
            .mutations
            .iter()
            .filter(|(_, m)| m.expires <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in expired {
            self.mutations.pop(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(name: &str, uid: &str, rv: u64) -> model::ResourceClaim {
        claim_owned_by(name, uid, rv, "")
    }

    fn claim_owned_by(name: &str, uid: &str, rv: u64, owner: &str) -> model::ResourceClaim {
        let mut c = model::ResourceClaim::default();
        c.meta.namespace = "ns".into();
        c.meta.name = name.into();
        c.meta.uid = uid.into();
        c.meta.resource_version = rv.to_string();
        if !owner.is_empty() {
            c.meta.owner_references.push(model::OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: "pod".into(),
                uid: owner.into(),
                controller: true,
                block_owner_deletion: true,
            });
        }
        c
    }

    fn rv(obj: &Option<model::ResourceClaim>) -> Option<&str> {
        obj.as_ref().map(|o| o.meta.resource_version.as_str())
    }

    fn owned_by(uid: &'static str) -> impl Fn(&model::ResourceClaim) -> bool {
        move |c| c.meta.owner_references.iter().any(|o| o.uid == uid)
    }

    fn cache_with_clock() -> (MutationCache<model::ResourceClaim>, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new());
        let cache = MutationCache::new().with_clock(clock.clone());
        (cache, clock)
    }

    #[test]
    fn an_older_mutation_does_not_replace_a_newer_one() {
        let mut c = MutationCache::new();
        assert!(c.mutation(claim("a", "u", 5)));
        assert!(!c.mutation(claim("a", "u", 4)));
        assert_eq!(rv(&c.get("ns/a", None)), Some("5"));
        assert!(c.mutation(claim("a", "u", 5)), "equal RV replaces");
        assert!(c.mutation(claim("a", "u", 6)));
        assert_eq!(rv(&c.get("ns/a", None)), Some("6"));
    }

    #[test]
    fn unparsable_resource_versions_are_not_remembered() {
        let mut c = MutationCache::new();
        let mut bad = claim("a", "u", 1);
        bad.meta.resource_version = "not-a-number".into();
        assert!(!c.mutation(bad));
        assert!(c.is_empty());
    }

    #[test]
    fn without_backing_the_mutation_is_returned_only_with_include_adds() {
        let mut with = MutationCache::new();
        with.mutation(claim("a", "u", 5));
        assert_eq!(rv(&with.get("ns/a", None)), Some("5"));

        let mut without = MutationCache::with_config(MutationCacheConfig {
            include_adds: false,
            ..MutationCacheConfig::default()
        });
        without.mutation(claim("a", "u", 5));
        assert_eq!(without.get("ns/a", None), None);
    }

    #[test]
    fn the_newer_of_backing_and_mutation_wins() {
        let mut c = MutationCache::new();
        c.mutation(claim("a", "u", 7));
        let got = c.get("ns/a", Some(claim("a", "u", 6)));
        assert_eq!(rv(&got), Some("7"), "mutation is newer");
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn a_backing_copy_at_least_as_new_evicts_the_mutation() {
        let mut c = MutationCache::new();
        c.mutation(claim("a", "u", 7));
        assert_eq!(rv(&c.get("ns/a", Some(claim("a", "u", 7)))), Some("7"));
        assert!(c.is_empty(), "equal RV evicts");
        // The backing copy disappears again (e.g. relist race): nothing lingers.
        assert_eq!(c.get("ns/a", None), None);

        c.mutation(claim("b", "u2", 3));
        assert_eq!(rv(&c.get("ns/b", Some(claim("b", "u2", 9)))), Some("9"));
        assert!(c.is_empty(), "newer backing evicts");
    }

    #[test]
    fn an_unparsable_backing_version_returns_backing_and_keeps_the_entry() {
        let mut c = MutationCache::new();
        c.mutation(claim("a", "u", 7));
        let mut weird = claim("a", "u", 0);
        weird.meta.resource_version = "x".into();
        assert_eq!(rv(&c.get("ns/a", Some(weird))), Some("x"));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn entries_expire_after_the_ttl() {
        let (mut c, clock) = cache_with_clock();
        c.mutation(claim("a", "u", 5));
        clock.advance(Duration::from_secs(3599));
        assert!(c.get("ns/a", None).is_some());
        clock.advance(Duration::from_secs(1));
        assert_eq!(c.get("ns/a", None), None);
        assert!(c.is_empty());
    }

    #[test]
    fn an_expired_newer_entry_no_longer_blocks_older_mutations() {
        let (mut c, clock) = cache_with_clock();
        c.mutation(claim("a", "u", 9));
        clock.advance(Duration::from_secs(3600));
        assert!(c.mutation(claim("a", "u", 4)));
    }

    #[test]
    fn the_lru_holds_at_most_capacity_entries() {
        let mut c = MutationCache::with_config(MutationCacheConfig {
            capacity: NonZeroUsize::new(3).unwrap(),
            ..MutationCacheConfig::default()
        });
        for i in 0..5 {
            c.mutation(claim(&format!("c{i}"), &format!("u{i}"), 10 + i));
        }
        assert_eq!(c.len(), 3);
        assert_eq!(c.get("ns/c0", None), None, "least recent evicted");
        assert_eq!(c.get("ns/c1", None), None);
        assert!(c.get("ns/c4", None).is_some());
    }

    #[test]
    fn the_default_capacity_is_one_hundred() {
        let mut c = MutationCache::new();
        for i in 0..150 {
            c.mutation(claim(&format!("c{i}"), "u", 1));
        }
        assert_eq!(c.len(), 100);
    }

    #[test]
    fn by_index_replaces_backing_objects_with_newer_mutations_and_appends_adds() {
        let mut c = MutationCache::new();
        c.mutation(claim_owned_by("a", "ua", 8, "pod-1")); // newer than informer
        c.mutation(claim_owned_by("z-new", "uz", 9, "pod-1")); // informer lacks it
        c.mutation(claim_owned_by("b-new", "ub", 9, "pod-1")); // informer lacks it
        c.mutation(claim_owned_by("other", "uo", 9, "pod-2")); // different owner
        let backing = vec![
            claim_owned_by("a", "ua", 5, "pod-1"),
            claim_owned_by("c", "uc", 5, "pod-1"),
        ];
        let got = c.by_index(backing, owned_by("pod-1"));
        let names: Vec<(&str, &str)> = got
            .iter()
            .map(|o| (o.meta.name.as_str(), o.meta.resource_version.as_str()))
            .collect();
        assert_eq!(
            names,
            [("a", "8"), ("c", "5"), ("b-new", "9"), ("z-new", "9")]
        );
    }

    #[test]
    fn by_index_without_include_adds_returns_only_backing_objects() {
        let mut c = MutationCache::with_config(MutationCacheConfig {
            include_adds: false,
            ..MutationCacheConfig::default()
        });
        c.mutation(claim_owned_by("new", "un", 9, "pod-1"));
        let got = c.by_index(Vec::new(), owned_by("pod-1"));
        assert!(got.is_empty());
    }

    #[test]
    fn by_index_evicts_mutations_the_informer_caught_up_with() {
        let mut c = MutationCache::new();
        c.mutation(claim_owned_by("a", "ua", 5, "pod-1"));
        let got = c.by_index(
            vec![claim_owned_by("a", "ua", 6, "pod-1")],
            owned_by("pod-1"),
        );
        assert_eq!(got.len(), 1, "not returned twice");
        assert_eq!(got[0].meta.resource_version, "6");
        assert!(c.is_empty());
    }

    #[test]
    fn on_add_or_update_evicts_mutations_that_are_not_newer() {
        let mut c = MutationCache::new();
        c.mutation(claim("a", "u", 5));
        c.on_add_or_update(&claim("a", "u", 4));
        assert_eq!(c.len(), 1, "informer still behind");
        c.on_add_or_update(&claim("a", "u", 5));
        assert!(c.is_empty());
    }

    #[test]
    fn a_deleted_just_created_claim_is_not_returned_any_more() {
        let mut c = MutationCache::new();
        // Created by the controller; the informer never listed it.
        c.mutation(claim_owned_by("pod-gpu-x7k2q", "claim-uid", 10, "pod-1"));
        assert_eq!(c.by_index(Vec::new(), owned_by("pod-1")).len(), 1);
        // The informer reports the deletion (its last state may be newer).
        c.on_delete(&claim_owned_by("pod-gpu-x7k2q", "claim-uid", 12, "pod-1"));
        assert!(c.by_index(Vec::new(), owned_by("pod-1")).is_empty());
        assert_eq!(c.get("ns/pod-gpu-x7k2q", None), None);
    }

    #[test]
    fn on_delete_evicts_by_uid_even_if_the_mutation_looks_newer() {
        let mut c = MutationCache::new();
        c.mutation(claim("a", "u", 20));
        // A tombstone (DeletedFinalStateUnknown) may carry an older last-known state.
        c.on_delete(&claim("a", "u", 15));
        assert!(c.is_empty());
    }

    #[test]
    fn on_delete_keeps_a_newer_mutation_of_a_different_object() {
        let mut c = MutationCache::new();
        // A re-created object under the same name (new UID, later RV).
        c.mutation(claim("a", "new-uid", 30));
        c.on_delete(&claim("a", "old-uid", 25));
        assert_eq!(rv(&c.get("ns/a", None)), Some("30"));
    }

    #[test]
    fn on_delete_evicts_an_older_mutation_of_a_different_uid() {
        let mut c = MutationCache::new();
        c.mutation(claim("a", "other", 20));
        c.on_delete(&claim("a", "u", 25));
        assert!(c.is_empty());
    }

    #[test]
    fn the_tombstone_refuses_late_mutations_of_the_deleted_object() {
        let mut c = MutationCache::new();
        c.on_delete(&claim("a", "u", 25));
        assert!(!c.mutation(claim("a", "u", 30)), "same UID");
        assert!(
            !c.mutation(claim("a", "other", 25)),
            "RV not newer than the deletion"
        );
        assert!(!c.mutation(claim("a", "other", 3)));
        assert!(
            c.mutation(claim("a", "other", 26)),
            "a newer re-created object"
        );
        assert!(c.mutation(claim("b", "u2", 1)), "other keys are unaffected");
    }

    #[test]
    fn tombstones_expire_after_the_ttl() {
        let (mut c, clock) = cache_with_clock();
        c.on_delete(&claim("a", "u", 25));
        clock.advance(Duration::from_secs(3600));
        assert!(c.mutation(claim("a", "u", 25)));
    }

    #[test]
    fn works_through_arc() {
        let mut c: MutationCache<Arc<model::ResourceClaim>> = MutationCache::new();
        c.mutation(Arc::new(claim("a", "u", 2)));
        let got = c.get("ns/a", Some(Arc::new(claim("a", "u", 1)))).unwrap();
        assert_eq!(got.meta.resource_version, "2");
    }
}
