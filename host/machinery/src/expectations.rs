//! Creation expectations, after Grove's UID-based store (upstream-behaviour §5.2).
//!
//! Per controller key, the UIDs of objects this controller created that the
//! informer has not shown yet. The informer's add event retires a creation (the
//! ResourceClaim controller waits for a created claim to become visible rather
//! than listing owned objects). A key holds a record only while something is
//! pending, and the record goes with its owner: the store stays as small as the
//! creations in flight.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

#[derive(Debug, Default)]
pub struct ExpectationsStore {
    records: Mutex<HashMap<String, HashSet<String>>>,
}

impl ExpectationsStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// After a successful create: expect these UIDs to appear.
    pub fn expect_creations<I, S>(&self, key: &str, uids: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut records = self.lock();
        let record = records.entry(key.to_owned()).or_default();
        record.extend(uids.into_iter().map(Into::into));
        if record.is_empty() {
            records.remove(key);
        }
    }

    /// The informer shows these UIDs: their creations are no longer pending.
    /// Unknown keys and UIDs are ignored; a record left empty is dropped.
    pub fn observe_creations<I, S>(&self, key: &str, uids: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut records = self.lock();
        if let Some(record) = records.get_mut(key) {
            for uid in uids {
                record.remove(uid.as_ref());
            }
            if record.is_empty() {
                records.remove(key);
            }
        }
    }

    /// Forget the key (its owner is gone). No-op if absent.
    pub fn delete_expectations(&self, key: &str) {
        self.lock().remove(key);
    }

    /// UIDs created but not yet observed, sorted.
    pub fn get_create_expectations(&self, key: &str) -> Vec<String> {
        let records = self.lock();
        let mut uids: Vec<String> = records
            .get(key)
            .map(|r| r.iter().cloned().collect())
            .unwrap_or_default();
        uids.sort_unstable();
        uids
    }

    /// How many keys hold pending creations.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, HashSet<String>>> {
        // Every mutation is a single step on plain sets: a poisoned lock still
        // holds consistent data.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expect_creations_unions_per_key() {
        let s = ExpectationsStore::new();
        s.expect_creations("pod:ns/a", ["u1"]);
        s.expect_creations("pod:ns/a", ["u2", "u1"]);
        s.expect_creations("pod:ns/b", ["u3"]);
        assert_eq!(s.get_create_expectations("pod:ns/a"), ["u1", "u2"]);
        assert_eq!(s.get_create_expectations("pod:ns/b"), ["u3"]);
        assert!(s.get_create_expectations("pod:ns/c").is_empty());
    }

    #[test]
    fn observed_creations_retire_and_an_empty_record_is_dropped() {
        let s = ExpectationsStore::new();
        s.expect_creations("k", ["u1", "u2"]);
        s.observe_creations("k", ["u1", "unknown"]);
        s.observe_creations("other", ["u2"]);
        assert_eq!(s.get_create_expectations("k"), ["u2"]);
        s.observe_creations("k", ["u2"]);
        assert!(s.is_empty(), "nothing pending, nothing kept");
        s.expect_creations("k", Vec::<String>::new());
        assert!(s.is_empty());
    }

    #[test]
    fn delete_expectations_drops_the_record() {
        let s = ExpectationsStore::new();
        s.expect_creations("k", ["u1"]);
        s.delete_expectations("k");
        s.delete_expectations("absent");
        assert!(s.get_create_expectations("k").is_empty());
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn concurrent_expectations_are_not_lost() {
        let s = std::sync::Arc::new(ExpectationsStore::new());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for i in 0..100 {
                        s.expect_creations("k", [format!("{t}-{i}")]);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(s.get_create_expectations("k").len(), 800);
    }
}
