//! Live lists, as a decision's read scope declares them:
//!
//! - `related-only`: the decision gets only the listed objects its watch of the
//!   kind relates to the primary (indexed once per list, as the watch's cache
//!   is), not the whole namespace;
//! - freshness `after-observed`: the keys of a namespace share one list. A key
//!   may take any list issued after the host observed the primary copy it
//!   decides on, and after the last event of the kind that mapped to a key of
//!   that namespace (else a key requeued by an object's deletion could take a
//!   list that still shows the object, decide the same, and never be enqueued
//!   again). At most one list per namespace and selector is in flight; the keys
//!   waiting take it. A list is kept for [`RETAIN`] after it was issued.
//!
//! `after-dequeue` (upstream's rule) lists once per decision that asks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::DynamicObject;
use rekon_contract::controller::{Freshness, Kind, ListRequest};

use super::describe::Read;
use super::paths::Projection;
use super::relate::Relation;
use super::{Cached, to_value};
use crate::cache::{Cache, ObjectKey};
use crate::reconcile::ReconcileError;

/// How long a shared list is kept for later keys (memory, not freshness: see above).
const RETAIN: Duration = Duration::from_secs(5);

/// One list, projected for the decisions that take it.
pub(super) struct Listed {
    issued: Instant,
    /// Every object, read-projected JSON text, sorted by namespace and name.
    objects: Vec<Arc<str>>,
    /// With `related-only`: the objects as the watch projects them (indexed by
    /// its mapping), and each one's read-projected text.
    related: Option<(Cache<Cached>, HashMap<ObjectKey, Arc<str>>)>,
}

impl Listed {
    /// Projects `items` (sorted) for `read`; with `related-only`, indexes them as
    /// the watch `watch` does.
    pub(super) fn new(
        issued: Instant,
        mut items: Vec<DynamicObject>,
        read: &Read,
        watch: Option<(&Relation, &Projection)>,
    ) -> Self {
        items.sort_by(|a, b| {
            (&a.metadata.namespace, &a.metadata.name)
                .cmp(&(&b.metadata.namespace, &b.metadata.name))
        });
        let values: Vec<serde_json::Value> = items.iter().map(to_value).collect();
        let texts: Vec<Arc<str>> = values
            .iter()
            .map(|v| Arc::from(read.projection.project(v).to_string()))
            .collect();
        let related = watch.map(|(relation, projection)| {
            let cache = relation.related_cache();
            let mut by_key = HashMap::with_capacity(values.len());
            for (value, text) in values.iter().zip(&texts) {
                let cached = Cached::new(projection.project(value));
                by_key.insert(cached.key.clone(), text.clone());
                cache.apply(cached);
            }
            (cache, by_key)
        });
        Self {
            issued,
            objects: texts,
            related,
        }
    }

    /// What a decision of `primary` is given, in namespace/name order.
    pub(super) fn answer(&self, primary: &Cached, relation: Option<&Relation>) -> Vec<String> {
        match (&self.related, relation) {
            (Some((cache, texts)), Some(relation)) => relation
                .related(primary, cache)
                .iter()
                .filter_map(|o| texts.get(&o.key))
                .map(|t| t.to_string())
                .collect(),
            _ => self.objects.iter().map(|t| t.to_string()).collect(),
        }
    }
}

/// What identifies a shareable list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ListKey {
    kind: Kind,
    namespace: String,
    label_selector: String,
    field_selector: String,
}

type Slot = tokio::sync::Mutex<Option<Arc<Listed>>>;

/// The shared lists of one controller module, and when events of a read kind
/// last enqueued keys, per namespace.
#[derive(Default)]
pub(super) struct LiveLists {
    slots: Mutex<HashMap<ListKey, Arc<Slot>>>,
    changes: Mutex<HashMap<(Kind, String), Instant>>,
}

impl LiveLists {
    /// An event of `kind` enqueued keys of `namespace` now.
    pub(super) fn changed(&self, kind: &Kind, namespace: &str) {
        let mut changes = self.changes.lock().unwrap();
        changes.retain(|_, at| at.elapsed() < RETAIN);
        changes.insert((kind.clone(), namespace.to_string()), Instant::now());
    }

    /// The list `request` asks for in `namespace`: with `after-observed` a
    /// shared one issued late enough, else (or if none) one `issue` makes now.
    pub(super) async fn list<F>(
        &self,
        read: &Read,
        request: &ListRequest,
        namespace: &str,
        observed: Instant,
        issue: F,
    ) -> Result<Arc<Listed>, ReconcileError>
    where
        F: AsyncFnOnce(Instant) -> Result<Listed, ReconcileError>,
    {
        if read.freshness == Freshness::AfterDequeue {
            return issue(Instant::now()).await.map(Arc::new);
        }
        let not_before = match self
            .changes
            .lock()
            .unwrap()
            .get(&(request.kind.clone(), namespace.to_string()))
        {
            Some(changed) => observed.max(*changed),
            None => observed,
        };
        let key = ListKey {
            kind: request.kind.clone(),
            namespace: namespace.to_string(),
            label_selector: request.label_selector.clone(),
            field_selector: request.field_selector.clone(),
        };
        let slot = {
            let mut slots = self.slots.lock().unwrap();
            // Held (strong count > 1) or locked: in use, keep.
            slots.retain(|_, slot| {
                Arc::strong_count(slot) > 1
                    || slot.try_lock().map_or(true, |listed| {
                        listed.as_ref().is_some_and(|l| l.issued.elapsed() < RETAIN)
                    })
            });
            slots.entry(key).or_default().clone()
        };
        let mut slot = slot.lock().await;
        if let Some(listed) = slot.as_ref()
            && listed.issued >= not_before
        {
            return Ok(listed.clone());
        }
        let listed = Arc::new(issue(Instant::now()).await?);
        *slot = Some(listed.clone());
        Ok(listed)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn read(freshness: Freshness) -> Read {
        Read {
            kind: Kind::new("", "v1", "Pod"),
            projection: Projection::new(&[]).unwrap(),
            freshness,
            related_by: None,
        }
    }

    fn request() -> ListRequest {
        ListRequest {
            kind: Kind::new("", "v1", "Pod"),
            ..ListRequest::default()
        }
    }

    /// Lists `ns` through `lists`, counting the lists issued.
    async fn list(
        lists: &LiveLists,
        read: &Read,
        ns: &str,
        observed: Instant,
        issued: &AtomicUsize,
    ) {
        lists
            .list(read, &request(), ns, observed, async |at| {
                issued.fetch_add(1, Ordering::SeqCst);
                Ok(Listed::new(at, Vec::new(), read, None))
            })
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn keys_observed_before_a_list_share_it_and_an_event_after_it_forces_a_new_one() {
        let lists = LiveLists::default();
        let read = read(Freshness::AfterObserved);
        let issued = AtomicUsize::new(0);
        let observed = Instant::now();
        list(&lists, &read, "a", observed, &issued).await;
        list(&lists, &read, "a", observed, &issued).await;
        assert_eq!(
            issued.load(Ordering::SeqCst),
            1,
            "the second key takes the first list"
        );
        list(&lists, &read, "b", observed, &issued).await;
        assert_eq!(
            issued.load(Ordering::SeqCst),
            2,
            "another namespace lists on its own"
        );
        lists.changed(&read.kind, "a");
        list(&lists, &read, "a", observed, &issued).await;
        assert_eq!(
            issued.load(Ordering::SeqCst),
            3,
            "an event after the list: a new one"
        );
        list(&lists, &read, "a", Instant::now(), &issued).await;
        assert_eq!(
            issued.load(Ordering::SeqCst),
            4,
            "a copy observed after the list: a new one"
        );
    }

    #[tokio::test]
    async fn after_dequeue_lists_for_every_decision() {
        let lists = LiveLists::default();
        let read = read(Freshness::AfterDequeue);
        let issued = AtomicUsize::new(0);
        let observed = Instant::now();
        list(&lists, &read, "a", observed, &issued).await;
        list(&lists, &read, "a", observed, &issued).await;
        assert_eq!(issued.load(Ordering::SeqCst), 2);
    }
}
