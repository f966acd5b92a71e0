//! Grove's UID-based expectations store (upstream-behaviour §5.2).
//!
//! Per controller key, the UIDs of objects this controller created or deleted that
//! the informer has not reflected yet. There is no barrier and no TTL: the reconcile
//! reads the sets and accounts for them, and `sync_expectations` reconciles them
//! with what the informer lists (which also rebuilds state after a restart).
//!
//! Beyond Grove, [`ExpectationsStore::observe_creations`] lets the informer's add
//! event retire a creation (the ResourceClaim controller needs it: it waits for a
//! created claim to become visible rather than listing owned objects).

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

#[derive(Debug, Default)]
struct Record {
    uids_to_add: HashSet<String>,
    uids_to_delete: HashSet<String>,
}

#[derive(Debug, Default)]
pub struct ExpectationsStore {
    records: Mutex<HashMap<String, Record>>,
}

impl ExpectationsStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// After a successful create: expect these UIDs to appear. Creates the record.
    pub fn expect_creations<I, S>(&self, key: &str, uids: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut records = self.lock();
        let record = records.entry(key.to_owned()).or_default();
        record.uids_to_add.extend(uids.into_iter().map(Into::into));
    }

    /// After a successful delete call: expect these UIDs to disappear. They stop
    /// being expected creations. Creates the record.
    pub fn expect_deletions<I, S>(&self, key: &str, uids: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut records = self.lock();
        let record = records.entry(key.to_owned()).or_default();
        for uid in uids {
            let uid = uid.into();
            record.uids_to_add.remove(&uid);
            record.uids_to_delete.insert(uid);
        }
    }

    /// The informer (or a 404 on delete) shows these UIDs gone: no longer expected
    /// either way. Unknown keys and UIDs are ignored.
    pub fn observe_deletions<I, S>(&self, key: &str, uids: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut records = self.lock();
        if let Some(record) = records.get_mut(key) {
            for uid in uids {
                record.uids_to_add.remove(uid.as_ref());
                record.uids_to_delete.remove(uid.as_ref());
            }
        }
    }

    /// The informer shows these UIDs: their creations are no longer pending.
    /// Unknown keys and UIDs are ignored; deletion expectations are untouched.
    pub fn observe_creations<I, S>(&self, key: &str, uids: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut records = self.lock();
        if let Some(record) = records.get_mut(key) {
            for uid in uids {
                record.uids_to_add.remove(uid.as_ref());
            }
        }
    }

    /// Reconcile with the informer's view of the owned objects (no-op without a
    /// record): listed non-terminating objects are no longer pending creation;
    /// pending deletions are kept only for objects still listed as non-terminating,
    /// and every terminating object is pending deletion.
    pub fn sync_expectations<S: AsRef<str>>(
        &self,
        key: &str,
        non_terminating: &[S],
        terminating: &[S],
    ) {
        let mut records = self.lock();
        let Some(record) = records.get_mut(key) else {
            return;
        };
        let listed: HashSet<&str> = non_terminating.iter().map(AsRef::as_ref).collect();
        record
            .uids_to_add
            .retain(|uid| !listed.contains(uid.as_str()));
        record
            .uids_to_delete
            .retain(|uid| listed.contains(uid.as_str()));
        record
            .uids_to_delete
            .extend(terminating.iter().map(|uid| uid.as_ref().to_owned()));
    }

    /// Forget the key (its owner is gone). No-op if absent.
    pub fn delete_expectations(&self, key: &str) {
        self.lock().remove(key);
    }

    /// UIDs created but not yet observed, sorted.
    pub fn get_create_expectations(&self, key: &str) -> Vec<String> {
        self.read(key, |r| &r.uids_to_add)
    }

    /// UIDs deleted but not yet observed gone, sorted.
    pub fn get_delete_expectations(&self, key: &str) -> Vec<String> {
        self.read(key, |r| &r.uids_to_delete)
    }

    pub fn has_delete_expectation(&self, key: &str, uid: &str) -> bool {
        self.lock()
            .get(key)
            .is_some_and(|r| r.uids_to_delete.contains(uid))
    }

    /// Whether a record exists for `key`.
    pub fn has_record(&self, key: &str) -> bool {
        self.lock().contains_key(key)
    }

    fn read(&self, key: &str, set: impl Fn(&Record) -> &HashSet<String>) -> Vec<String> {
        let records = self.lock();
        let mut uids: Vec<String> = records
            .get(key)
            .map(|r| set(r).iter().cloned().collect())
            .unwrap_or_default();
        uids.sort_unstable();
        uids
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Record>> {
        // Every mutation is a single step on plain sets: a poisoned lock still
        // holds consistent data.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "ns/owner";
    const NONE: &[&str] = &[];

    #[test]
    fn expect_creations_creates_the_record_then_unions() {
        let s = ExpectationsStore::new();
        assert!(!s.has_record(KEY));
        s.expect_creations(KEY, ["b"]);
        assert!(s.has_record(KEY));
        s.expect_creations(KEY, ["a", "b"]);
        assert_eq!(s.get_create_expectations(KEY), ["a", "b"]);
        assert!(s.get_delete_expectations(KEY).is_empty());
    }

    #[test]
    fn expect_deletions_moves_uids_out_of_the_creations() {
        let s = ExpectationsStore::new();
        s.expect_creations(KEY, ["a", "b"]);
        s.expect_deletions(KEY, ["a", "c"]);
        assert_eq!(s.get_create_expectations(KEY), ["b"]);
        assert_eq!(s.get_delete_expectations(KEY), ["a", "c"]);
        assert!(s.has_delete_expectation(KEY, "c"));
        assert!(!s.has_delete_expectation(KEY, "b"));
    }

    #[test]
    fn expect_deletions_creates_the_record_if_absent() {
        let s = ExpectationsStore::new();
        s.expect_deletions(KEY, ["x"]);
        assert_eq!(s.get_delete_expectations(KEY), ["x"]);
    }

    #[test]
    fn observe_deletions_removes_from_both_sets_and_ignores_unknowns() {
        let s = ExpectationsStore::new();
        s.expect_creations(KEY, ["a", "b"]);
        s.expect_deletions(KEY, ["c"]);
        s.observe_deletions(KEY, ["a", "c", "unknown"]);
        assert_eq!(s.get_create_expectations(KEY), ["b"]);
        assert!(s.get_delete_expectations(KEY).is_empty());

        s.observe_deletions("ns/other", ["b"]);
        assert!(!s.has_record("ns/other"), "no record is created");
    }

    #[test]
    fn observe_creations_only_touches_creations() {
        let s = ExpectationsStore::new();
        s.expect_creations(KEY, ["a", "b"]);
        s.expect_deletions(KEY, ["d"]);
        s.observe_creations(KEY, ["a", "d"]);
        assert_eq!(s.get_create_expectations(KEY), ["b"]);
        assert_eq!(s.get_delete_expectations(KEY), ["d"]);
        s.observe_creations("ns/other", ["b"]);
        assert!(!s.has_record("ns/other"));
    }

    #[test]
    fn sync_is_a_noop_without_a_record() {
        let s = ExpectationsStore::new();
        s.sync_expectations(KEY, &["a"], &["b"]);
        assert!(!s.has_record(KEY));
        assert!(s.get_delete_expectations(KEY).is_empty());
    }

    #[test]
    fn sync_retires_listed_creations() {
        let s = ExpectationsStore::new();
        s.expect_creations(KEY, ["seen", "unseen"]);
        s.sync_expectations(KEY, &["seen", "old"], NONE);
        assert_eq!(s.get_create_expectations(KEY), ["unseen"]);
    }

    #[test]
    fn sync_keeps_deletions_only_for_listed_non_terminating_objects() {
        let s = ExpectationsStore::new();
        s.expect_deletions(KEY, ["still-listed", "gone"]);
        s.sync_expectations(KEY, &["still-listed"], NONE);
        assert_eq!(
            s.get_delete_expectations(KEY),
            ["still-listed"],
            "an unlisted object is no longer pending deletion"
        );
    }

    #[test]
    fn sync_adds_every_terminating_object_as_a_deletion() {
        let s = ExpectationsStore::new();
        s.expect_deletions(KEY, ["gone"]);
        s.sync_expectations(KEY, &["running"], &["terminating"]);
        assert_eq!(s.get_delete_expectations(KEY), ["terminating"]);
        assert!(s.has_delete_expectation(KEY, "terminating"));
    }

    #[test]
    fn a_restarted_controller_rebuilds_deletions_from_the_informer() {
        // A fresh process has no memory of the deletes it issued before the restart.
        let s = ExpectationsStore::new();
        // Its first reconcile creates the record (e.g. by creating one object) ...
        s.expect_creations(KEY, ["new"]);
        // ... and syncs against the cache, which lists two objects still terminating.
        s.sync_expectations(KEY, &["new", "kept"], &["t1", "t2"]);
        assert!(s.get_create_expectations(KEY).is_empty());
        assert_eq!(s.get_delete_expectations(KEY), ["t1", "t2"]);
        // Both leave the informer: the next sync retires them.
        s.sync_expectations(KEY, &["new", "kept"], NONE);
        assert!(s.get_delete_expectations(KEY).is_empty());
    }

    #[test]
    fn delete_expectations_drops_the_record() {
        let s = ExpectationsStore::new();
        s.expect_creations(KEY, ["a"]);
        s.expect_deletions(KEY, ["b"]);
        s.delete_expectations(KEY);
        assert!(!s.has_record(KEY));
        assert!(s.get_create_expectations(KEY).is_empty());
        assert!(!s.has_delete_expectation(KEY, "b"));
        s.delete_expectations(KEY); // absent: no-op
    }

    #[test]
    fn keys_are_independent() {
        let s = ExpectationsStore::new();
        s.expect_creations("ns/a", ["1"]);
        s.expect_creations("ns/b", ["2"]);
        s.observe_creations("ns/a", ["2"]);
        assert_eq!(s.get_create_expectations("ns/a"), ["1"]);
        assert_eq!(s.get_create_expectations("ns/b"), ["2"]);
    }

    #[test]
    fn concurrent_expectations_are_not_lost() {
        let s = std::sync::Arc::new(ExpectationsStore::new());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for i in 0..100 {
                        s.expect_creations(KEY, [format!("{t}-{i}")]);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(s.get_create_expectations(KEY).len(), 800);
    }
}
