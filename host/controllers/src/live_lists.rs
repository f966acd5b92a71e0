//! Live lists shared by the keys of a namespace: pvc-protection's live pod
//! lists and a controller module's reads with freshness `after-observed`
//! follow this one rule.
//!
//! Freshness: a key may take any list issued after the host observed the cached
//! copy of its object it decides on, not only one issued after it was dequeued
//! (upstream, upstream-behaviour §1.5.3). Sound for a decision that only
//! releases a deleting object: a deleting object gains no new users (the
//! scheduler and kubelet refuse deleting PVCs, §1.5), so every object that can
//! still use it existed when the deleting copy was written, hence before the
//! host observed it, and a consistent LIST issued afterwards shows it unless it
//! is gone. Many keys then share one LIST: at most one is in flight per list
//! key (the slot's lock), and the keys waiting take the next one.
//!
//! Liveness: a list must also postdate the last event of the listed kind that
//! enqueued keys of its scope ([`SharedLists::changed`]); else a key requeued
//! by an object's deletion could take a list that still shows that object,
//! decide the same and never be enqueued again.
//!
//! A list is kept for [`RETAIN`] after it was issued, so keys dequeued one
//! after another share it too; older lists nobody holds are dropped by the next
//! request for any list. A failed list is not kept.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::ListParams;
use kube::core::ObjectList;

/// How long a shared list is kept for later keys (memory, not freshness: see above).
pub const RETAIN: Duration = Duration::from_secs(5);

/// The last list of one list key and when it was issued.
type Slot<T> = tokio::sync::Mutex<Option<(Instant, Arc<T>)>>;

/// Shared lists of `T` by list key `K`, and when events last enqueued keys of
/// each scope `S` (a namespace, or a kind and a namespace).
pub struct SharedLists<S, K, T> {
    slots: Mutex<HashMap<K, Arc<Slot<T>>>>,
    /// Entries older than [`RETAIN`] are dropped: every list still kept was
    /// issued after them.
    changes: Mutex<HashMap<S, Instant>>,
}

impl<S, K, T> Default for SharedLists<S, K, T> {
    fn default() -> Self {
        Self {
            slots: Mutex::default(),
            changes: Mutex::default(),
        }
    }
}

impl<S: Hash + Eq, K: Hash + Eq, T> SharedLists<S, K, T> {
    /// An event of the listed kind enqueued keys of `scope` now.
    pub fn changed(&self, scope: S) {
        let mut changes = self.changes.lock().unwrap();
        changes.retain(|_, at| at.elapsed() < RETAIN);
        changes.insert(scope, Instant::now());
    }

    /// The list `key` (in `scope`) for a key whose object copy was observed at
    /// `observed`: a kept one issued late enough, else one `issue` makes now.
    pub async fn list<F, E>(
        &self,
        scope: &S,
        key: K,
        observed: Instant,
        issue: F,
    ) -> Result<Arc<T>, E>
    where
        F: AsyncFnOnce() -> Result<T, E>,
    {
        let not_before = match self.changes.lock().unwrap().get(scope) {
            Some(changed) => observed.max(*changed),
            None => observed,
        };
        let slot = {
            let mut slots = self.slots.lock().unwrap();
            // Held (strong count > 1) or locked: in use, keep.
            slots.retain(|_, slot| {
                Arc::strong_count(slot) > 1
                    || slot.try_lock().map_or(true, |list| {
                        list.as_ref()
                            .is_some_and(|(issued, _)| issued.elapsed() < RETAIN)
                    })
            });
            slots.entry(key).or_default().clone()
        };
        let mut slot = slot.lock().await;
        if let Some((issued, list)) = slot.as_ref()
            && *issued >= not_before
        {
            return Ok(list.clone());
        }
        let issued = Instant::now();
        let list = Arc::new(issue().await?);
        *slot = Some((issued, list.clone()));
        Ok(list)
    }
}

/// Items per page of a live list (client-go's pager default): a list is never
/// held whole as one response body, only as what its pages are folded into.
pub const PAGE: u32 = 500;

/// Restarts of a paginated list whose continue token expired (410) before it fails.
const RESTARTS: usize = 3;

/// Reads every page of the list `params` asks for (a consistent read: the pages
/// after the first are served at its resourceVersion) with `fetch`, folding each
/// page's items into a fresh `start()` with `add`. A list whose snapshot was
/// compacted away mid-list starts again: a fresh list is as fresh.
pub async fn paginated<T: Clone, A, Page>(
    params: &ListParams,
    mut fetch: impl FnMut(ListParams) -> Page,
    start: impl Fn() -> A,
    mut add: impl FnMut(&mut A, Vec<T>),
) -> Result<A, kube::Error>
where
    Page: Future<Output = Result<ObjectList<T>, kube::Error>>,
{
    let mut restarts = 0;
    'list: loop {
        let mut folded = start();
        let mut params = params.clone().limit(PAGE);
        loop {
            match fetch(params.clone()).await {
                Ok(page) => {
                    add(&mut folded, page.items);
                    match page.metadata.continue_.filter(|token| !token.is_empty()) {
                        Some(token) => params = params.continue_token(&token),
                        None => return Ok(folded),
                    }
                }
                Err(kube::Error::Api(status)) if status.code == 410 && restarts < RESTARTS => {
                    restarts += 1;
                    continue 'list;
                }
                Err(err) => return Err(err),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    type Lists = SharedLists<String, String, ()>;

    /// Lists `ns` through `lists`, counting the lists issued.
    async fn list(lists: &Lists, ns: &str, observed: Instant, issued: &AtomicUsize) {
        lists
            .list(&ns.to_string(), ns.to_string(), observed, async || {
                issued.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Infallible>(())
            })
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn keys_observed_before_a_list_share_it_and_an_event_after_it_forces_a_new_one() {
        let lists = Lists::default();
        let issued = AtomicUsize::new(0);
        let observed = Instant::now();
        list(&lists, "a", observed, &issued).await;
        list(&lists, "a", observed, &issued).await;
        assert_eq!(
            issued.load(Ordering::SeqCst),
            1,
            "the second key takes the first list"
        );
        list(&lists, "b", observed, &issued).await;
        assert_eq!(
            issued.load(Ordering::SeqCst),
            2,
            "another namespace lists on its own"
        );
        lists.changed("a".to_string());
        list(&lists, "a", observed, &issued).await;
        assert_eq!(
            issued.load(Ordering::SeqCst),
            3,
            "an event after the list: a new one"
        );
        list(&lists, "a", Instant::now(), &issued).await;
        assert_eq!(
            issued.load(Ordering::SeqCst),
            4,
            "a copy observed after the list: a new one"
        );
    }

    #[tokio::test]
    async fn a_failed_list_is_not_kept() {
        let lists = Lists::default();
        let observed = Instant::now();
        let failed = lists
            .list(&"a".to_string(), "a".to_string(), observed, async || {
                Err("down")
            })
            .await;
        assert_eq!(failed.unwrap_err(), "down");
        let issued = AtomicUsize::new(0);
        list(&lists, "a", observed, &issued).await;
        assert_eq!(issued.load(Ordering::SeqCst), 1, "the next key lists again");
    }
}
