//! Live lists, as a decision's read scope declares them:
//!
//! - `related-only`: the decision gets only the listed objects its watch of the
//!   kind relates to the primary (indexed once per list, as the watch's cache
//!   is), not the whole namespace;
//! - freshness `after-observed`: the keys of a namespace share one list per
//!   selector, by the rule of [`crate::live_lists`] (the one pvc-protection's
//!   live pod lists follow): a list issued after the host observed the primary
//!   copy a key decides on, and after the last event of the kind that mapped to
//!   a key of that namespace.
//!
//! `after-dequeue` (upstream's rule) lists once per decision that asks.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use kube::api::DynamicObject;
use rekon_contract::controller::{Freshness, Kind, ListRequest};

use super::Cached;
use super::describe::Read;
use super::paths::Projection;
use super::relate::Relation;
use crate::cache::{Cache, ObjectKey};
use crate::live_lists::SharedLists;
use crate::reconcile::ReconcileError;

/// How a watch of the listed kind relates and projects it (`related-only`).
pub(super) type Watch<'a> = Option<(&'a Relation, &'a Projection)>;

/// One list, projected for the decisions that take it.
pub(super) struct Listed {
    /// Every object's read-projected JSON text, by key (without `related-only`).
    objects: Vec<(ObjectKey, Box<str>)>,
    related: Option<Related>,
}

/// With `related-only`: the objects as the watch projects them (indexed by its
/// mapping), and each one's read-projected text.
struct Related {
    cache: Cache<Cached>,
    texts: HashMap<ObjectKey, Box<str>>,
}

impl Listed {
    pub(super) fn new(watch: Watch<'_>) -> Self {
        Self {
            objects: Vec::new(),
            related: watch.map(|(relation, _)| Related {
                cache: relation.related_cache(),
                texts: HashMap::new(),
            }),
        }
    }

    /// Projects one page of the list for `read`; with `related-only`, indexes
    /// its objects as the watch does.
    pub(super) fn add(&mut self, items: Vec<DynamicObject>, read: &Read, watch: Watch<'_>) {
        for item in &items {
            let text = read.projection.project_object(item).to_string().into();
            match (&mut self.related, watch) {
                (Some(Related { cache, texts }), Some((_, projection))) => {
                    let cached = Cached::new(&projection.project_object(item));
                    texts.insert(cached.key.clone(), text);
                    cache.apply(cached);
                }
                _ => {
                    let meta = &item.metadata;
                    let key = ObjectKey::new(
                        meta.namespace.clone().unwrap_or_default(),
                        meta.name.clone().unwrap_or_default(),
                    );
                    self.objects.push((key, text));
                }
            }
        }
    }

    /// The whole list read: its objects in namespace/name order.
    pub(super) fn sorted(mut self) -> Self {
        self.objects.sort_by(|a, b| a.0.cmp(&b.0));
        self
    }

    /// What a decision of `primary` is given, in namespace/name order.
    pub(super) fn answer(&self, primary: &Cached, relation: Option<&Relation>) -> Vec<String> {
        match (&self.related, relation) {
            (Some(Related { cache, texts }), Some(relation)) => relation
                .related(primary, cache)
                .iter()
                .filter_map(|o| texts.get(&o.key))
                .map(|t| t.to_string())
                .collect(),
            _ => self.objects.iter().map(|(_, t)| t.to_string()).collect(),
        }
    }
}

/// What identifies a shareable list within its kind and namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ListKey {
    kind: Kind,
    namespace: String,
    label_selector: String,
    field_selector: String,
}

/// The shared lists of one controller module; events are counted per kind
/// and namespace.
#[derive(Default)]
pub(super) struct LiveLists(SharedLists<(Kind, String), ListKey, Listed>);

impl LiveLists {
    /// An event of `kind` enqueued keys of `namespace` now.
    pub(super) fn changed(&self, kind: &Kind, namespace: &str) {
        self.0.changed((kind.clone(), namespace.to_string()));
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
        F: AsyncFnOnce() -> Result<Listed, ReconcileError>,
    {
        if read.freshness == Freshness::AfterDequeue {
            return issue().await.map(Arc::new);
        }
        let key = ListKey {
            kind: request.kind.clone(),
            namespace: namespace.to_string(),
            label_selector: request.label_selector.clone(),
            field_selector: request.field_selector.clone(),
        };
        let scope = (request.kind.clone(), namespace.to_string());
        self.0.list(&scope, key, observed, issue).await
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
            .list(read, &request(), ns, observed, async || {
                issued.fetch_add(1, Ordering::SeqCst);
                Ok(Listed::new(None))
            })
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn after_observed_shares_a_list_until_an_event_of_its_kind_in_its_namespace() {
        let lists = LiveLists::default();
        let read = read(Freshness::AfterObserved);
        let issued = AtomicUsize::new(0);
        let observed = Instant::now();
        list(&lists, &read, "a", observed, &issued).await;
        list(&lists, &read, "a", observed, &issued).await;
        assert_eq!(issued.load(Ordering::SeqCst), 1, "shared");
        lists.changed(&Kind::new("", "v1", "Node"), "a");
        lists.changed(&read.kind, "b");
        list(&lists, &read, "a", observed, &issued).await;
        assert_eq!(
            issued.load(Ordering::SeqCst),
            1,
            "events of another kind or namespace keep it"
        );
        lists.changed(&read.kind, "a");
        list(&lists, &read, "a", observed, &issued).await;
        assert_eq!(
            issued.load(Ordering::SeqCst),
            2,
            "an event of its kind: a new one"
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
