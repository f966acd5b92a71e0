//! The ResourceClaim controller's memory of deleted pods (upstream-behaviour §3.2):
//! UIDs seen in pod delete events, bounded (upstream keeps 500). A reservation for
//! a remembered UID is dropped without looking the pod up.
//!
//! Not synchronised itself; wrap it in a `Mutex` to share it.

use std::num::NonZeroUsize;

use lru::LruCache;

/// The upstream bound.
pub const DEFAULT_CAPACITY: usize = 500;

pub struct DeletedPods {
    uids: LruCache<String, ()>,
}

impl Default for DeletedPods {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl DeletedPods {
    /// Remembers up to `capacity` UIDs (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        Self {
            uids: LruCache::new(capacity),
        }
    }

    /// Remember `uid`; the least recently remembered UID goes when full.
    pub fn insert(&mut self, uid: impl Into<String>) {
        self.uids.put(uid.into(), ());
    }

    /// Whether `uid` is remembered. A lookup does not refresh it (like golang-lru's
    /// `Contains`): recency follows deletions, not reads.
    pub fn contains(&self, uid: &str) -> bool {
        self.uids.contains(uid)
    }

    pub fn len(&self) -> usize {
        self.uids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.uids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_inserted_uids() {
        let mut d = DeletedPods::default();
        assert!(!d.contains("a"));
        d.insert("a");
        assert!(d.contains("a"));
        assert!(!d.contains("b"));
    }

    #[test]
    fn the_oldest_deletion_is_forgotten_beyond_capacity_and_lookups_do_not_refresh() {
        let mut d = DeletedPods::new(2);
        d.insert("a");
        d.insert("b");
        assert!(d.contains("a")); // must not make "a" recent
        d.insert("c");
        assert!(!d.contains("a"));
        assert!(d.contains("b") && d.contains("c"));
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn re_inserting_refreshes_a_uid() {
        let mut d = DeletedPods::new(2);
        d.insert("a");
        d.insert("b");
        d.insert("a");
        d.insert("c");
        assert!(d.contains("a"));
        assert!(!d.contains("b"));
    }

    #[test]
    fn the_default_bound_is_five_hundred() {
        let mut d = DeletedPods::default();
        for i in 0..600 {
            d.insert(format!("uid-{i}"));
        }
        assert_eq!(d.len(), 500);
        assert!(!d.contains("uid-99"));
        assert!(d.contains("uid-100"));
    }

    #[test]
    fn zero_capacity_still_remembers_the_latest() {
        let mut d = DeletedPods::new(0);
        d.insert("a");
        assert!(d.contains("a"));
    }
}
