//! Who owns whom, by uid: the index the garbage collector looks owners and dependents up in,
//! kept current by every write, so that collecting after a write costs that write's
//! dependents rather than a scan of every object.

use std::collections::{BTreeSet, HashMap};

use crate::store::ObjectKey;
use crate::stored::Ownership;

#[derive(Debug, Default)]
pub struct OwnerIndex {
    /// Every stored object's key, by its uid.
    by_uid: HashMap<Box<str>, ObjectKey>,
    /// Keys of the objects whose ownerReferences name a uid, by that uid (owner present or not).
    dependents: HashMap<Box<str>, BTreeSet<ObjectKey>>,
}

impl OwnerIndex {
    /// Records that `key` changed from `previous` to `current` (None: absent).
    pub fn update(
        &mut self,
        key: &ObjectKey,
        previous: Option<&Ownership>,
        current: Option<&Ownership>,
    ) {
        let old_uid = previous.map(|o| o.uid.as_str());
        let new_uid = current.map(|o| o.uid.as_str());
        if old_uid != new_uid {
            if let Some(uid) = old_uid {
                self.by_uid.remove(uid);
            }
            if let Some(uid) = new_uid.filter(|uid| !uid.is_empty()) {
                self.by_uid.insert(uid.into(), key.clone());
            }
        }
        let owners = |o: Option<&Ownership>| -> BTreeSet<String> {
            o.map(|o| o.owners.iter().cloned().collect())
                .unwrap_or_default()
        };
        let (old_owners, new_owners) = (owners(previous), owners(current));
        for gone in old_owners.difference(&new_owners) {
            if let Some(set) = self.dependents.get_mut(gone.as_str()) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(gone.as_str());
                }
            }
        }
        for added in new_owners.difference(&old_owners) {
            self.dependents
                .entry(added.as_str().into())
                .or_default()
                .insert(key.clone());
        }
    }

    /// The key of the object with this uid.
    pub fn key_of(&self, uid: &str) -> Option<&ObjectKey> {
        self.by_uid.get(uid)
    }

    /// Keys of the objects that name `uid` as an owner.
    pub fn dependents_of(&self, uid: &str) -> impl Iterator<Item = &ObjectKey> {
        self.dependents.get(uid).into_iter().flatten()
    }

    /// (uids indexed, owner uids with dependents).
    #[cfg(test)]
    pub fn len(&self) -> (usize, usize) {
        (self.by_uid.len(), self.dependents.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources;

    fn cm(name: &str, uid: &str, owners: &[&str]) -> (ObjectKey, Ownership) {
        let cms = resources::by_plural("", "configmaps").unwrap();
        (
            ObjectKey::new(cms, "d", name),
            Ownership {
                uid: uid.into(),
                owners: owners.iter().map(|o| o.to_string()).collect(),
            },
        )
    }

    #[test]
    fn dependents_follow_owner_reference_changes_and_removal() {
        let mut index = OwnerIndex::default();
        let (owner_key, owner) = cm("owner", "o1", &[]);
        let (dep_key, dep) = cm("dep", "d1", &["o1", "o2"]);
        index.update(&owner_key, None, Some(&owner));
        index.update(&dep_key, None, Some(&dep));
        assert_eq!(index.key_of("o1"), Some(&owner_key));
        assert_eq!(index.dependents_of("o2").collect::<Vec<_>>(), [&dep_key]);

        let (_, dep_now) = cm("dep", "d1", &["o1"]);
        index.update(&dep_key, Some(&dep), Some(&dep_now));
        assert_eq!(index.dependents_of("o2").count(), 0);
        assert_eq!(index.dependents_of("o1").count(), 1);

        index.update(&dep_key, Some(&dep_now), None);
        index.update(&owner_key, Some(&owner), None);
        assert_eq!(index.len(), (0, 0), "nothing is left of removed objects");
    }
}
