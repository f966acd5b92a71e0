//! A work queue with client-go semantics.
//!
//! - A key is queued at most once (dedup while queued).
//! - A key is handed to one worker at a time: adding a key that is being processed
//!   marks it dirty, and [`WorkQueue::done`] puts it back in the queue.
//! - Failures back off per key ([`WorkQueue::add_rate_limited`], 5 ms * 2^failures up
//!   to 1000 s, optionally combined with an overall token bucket); success calls
//!   [`WorkQueue::forget`].
//! - [`WorkQueue::add_after`] delays a key (requeue-after); a key delayed twice keeps
//!   the earlier time.
//! - [`WorkQueue::shutdown`] refuses new keys; [`WorkQueue::get`] drains what is queued
//!   and then returns `None`.
//!
//! Time is tokio's, so tests can pause and advance it.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::rate_limit::{RateLimiter, TokenBucketConfig};

/// What a work-queue key must be.
pub trait QueueKey: Clone + Eq + Hash + Debug + Send + Sync + 'static {}
impl<T: Clone + Eq + Hash + Debug + Send + Sync + 'static> QueueKey for T {}

/// Rate limits of one queue. The default is client-go's default controller limiter.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueConfig {
    /// Names the queue in logs and metrics.
    pub name: String,
    /// First per-key backoff delay.
    pub base_delay: Duration,
    /// Longest per-key backoff delay.
    pub max_delay: Duration,
    /// Overall limit on rate-limited re-adds; `None` turns it off.
    pub overall: Option<TokenBucketConfig>,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            name: "queue".into(),
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(1000),
            overall: Some(TokenBucketConfig {
                qps: 10.0,
                burst: 100,
            }),
        }
    }
}

impl QueueConfig {
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Per-key backoff only (tests, simulations).
    pub fn without_overall_limit(self) -> Self {
        Self {
            overall: None,
            ..self
        }
    }
}

/// Hooks for queue metrics (client-go's workqueue metrics); all default to no-ops.
pub trait QueueMetrics: Send + Sync {
    /// A key entered the queue (not counted when deduplicated).
    fn added(&self) {}
    /// The number of queued keys changed.
    fn depth(&self, _depth: usize) {}
    /// A key waited this long between being added and handed to a worker.
    fn queue_duration(&self, _waited: Duration) {}
    /// A worker held a key this long.
    fn work_duration(&self, _worked: Duration) {}
    /// A key was re-added with backoff.
    fn retried(&self) {}
}

/// No metrics.
pub struct NoMetrics;
impl QueueMetrics for NoMetrics {}

/// What the worker does with a key after its reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Success: forget the key's backoff.
    Done,
    /// Failure: requeue with the key's backoff.
    Retry,
    /// Success, but look again after this delay.
    RetryAfter(Duration),
}

pub struct WorkQueue<K> {
    config: QueueConfig,
    state: Mutex<State<K>>,
    /// Wakes waiting `get`s: a key was queued, a delay changed, or shutdown.
    wakeup: Notify,
    metrics: Arc<dyn QueueMetrics>,
}

struct State<K> {
    queue: VecDeque<K>,
    /// Keys that need processing, with the time they were first added.
    dirty: HashMap<K, Instant>,
    /// Keys handed to a worker, with the time they were handed out.
    processing: HashMap<K, Instant>,
    /// Delayed keys by (ready time, insertion order), and each key's slot there.
    waiting: BTreeMap<(Instant, u64), K>,
    waiting_slot: HashMap<K, (Instant, u64)>,
    next_seq: u64,
    limiter: RateLimiter<K>,
    shutting_down: bool,
}

impl<K: QueueKey> WorkQueue<K> {
    pub fn new(config: QueueConfig) -> Self {
        Self::with_metrics(config, Arc::new(NoMetrics))
    }

    pub fn with_metrics(config: QueueConfig, metrics: Arc<dyn QueueMetrics>) -> Self {
        let limiter = RateLimiter::new(
            config.base_delay,
            config.max_delay,
            config.overall,
            Instant::now(),
        );
        Self {
            config,
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: HashMap::new(),
                processing: HashMap::new(),
                waiting: BTreeMap::new(),
                waiting_slot: HashMap::new(),
                next_seq: 0,
                limiter,
                shutting_down: false,
            }),
            wakeup: Notify::new(),
            metrics,
        }
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Queue `key` unless it is already queued; if a worker holds it, it is queued
    /// again when that worker calls [`Self::done`]. Ignored after shutdown. A key
    /// waiting for a delay is due now instead: every reconcile returns its own
    /// requeue, so the one that runs asks for the delay again if it still needs it.
    pub fn add(&self, key: K) {
        let mut state = self.lock();
        if let Some(slot) = state.waiting_slot.remove(&key) {
            state.waiting.remove(&slot);
        }
        if self.enqueue(&mut state, key, Instant::now()) {
            drop(state);
            self.wakeup.notify_one();
        }
    }

    /// Queue `key` once `delay` has passed. A key already delayed keeps the earlier
    /// of the two times.
    pub fn add_after(&self, key: K, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let mut state = self.lock();
        if state.shutting_down {
            return;
        }
        let ready = Instant::now() + delay;
        if let Some(&slot) = state.waiting_slot.get(&key) {
            if slot.0 <= ready {
                return;
            }
            state.waiting.remove(&slot);
        }
        let slot = (ready, state.next_seq);
        state.next_seq += 1;
        state.waiting.insert(slot, key.clone());
        state.waiting_slot.insert(key, slot);
        drop(state);
        // A sleeping `get` may be waiting for a later time.
        self.wakeup.notify_one();
    }

    /// Queue `key` after its backoff delay (and the overall limit, if on).
    pub fn add_rate_limited(&self, key: K) {
        let delay = self.lock().limiter.when(key.clone(), Instant::now());
        self.metrics.retried();
        self.add_after(key, delay);
    }

    /// Reset `key`'s backoff (call on success).
    pub fn forget(&self, key: &K) {
        self.lock().limiter.forget(key);
    }

    /// How often `key` was rate-limited since it was last forgotten.
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.lock().limiter.failures(key)
    }

    /// The next key to process; waits for one. `None` once shut down and drained.
    /// The caller must call [`Self::done`] with the key when finished.
    pub async fn get(&self) -> Option<K> {
        loop {
            // Register before looking, so a wakeup between the look and the wait
            // is not lost.
            let wakeup = self.wakeup.notified();
            tokio::pin!(wakeup);
            wakeup.as_mut().enable();

            let next_ready = {
                let mut state = self.lock();
                let now = Instant::now();
                self.promote_due(&mut state, now);
                if let Some(key) = state.queue.pop_front() {
                    if let Some(added) = state.dirty.remove(&key) {
                        self.metrics.queue_duration(now.duration_since(added));
                    }
                    state.processing.insert(key.clone(), now);
                    self.metrics.depth(state.queue.len());
                    let more = !state.queue.is_empty();
                    drop(state);
                    if more {
                        // Pass the baton: another waiting worker can take the next key.
                        self.wakeup.notify_one();
                    }
                    return Some(key);
                }
                if state.shutting_down {
                    return None;
                }
                state.waiting.keys().next().map(|&(ready, _)| ready)
            };

            match next_ready {
                Some(ready) => {
                    tokio::select! {
                        _ = &mut wakeup => {}
                        _ = tokio::time::sleep_until(ready) => {}
                    }
                }
                None => wakeup.await,
            }
        }
    }

    /// The worker finished `key`. If it was added meanwhile, it is queued again.
    pub fn done(&self, key: &K) {
        let mut state = self.lock();
        if let Some(started) = state.processing.remove(key) {
            self.metrics
                .work_duration(Instant::now().duration_since(started));
        }
        if state.dirty.contains_key(key) {
            state.queue.push_back(key.clone());
            self.metrics.depth(state.queue.len());
            drop(state);
            self.wakeup.notify_one();
        }
    }

    /// Apply a reconcile's outcome to `key`, then mark it done.
    pub fn finish(&self, key: &K, outcome: Outcome) {
        match outcome {
            Outcome::Done => self.forget(key),
            Outcome::Retry => self.add_rate_limited(key.clone()),
            Outcome::RetryAfter(delay) => {
                self.forget(key);
                self.add_after(key.clone(), delay);
            }
        }
        self.done(key);
    }

    /// Refuse new keys, drop delayed ones, and let `get` return `None` once the
    /// queued keys are drained.
    pub fn shutdown(&self) {
        let mut state = self.lock();
        state.shutting_down = true;
        state.waiting.clear();
        state.waiting_slot.clear();
        drop(state);
        self.wakeup.notify_waiters();
    }

    pub fn is_shutting_down(&self) -> bool {
        self.lock().shutting_down
    }

    /// Keys queued and not yet handed out (delayed keys not included).
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys handed to workers and not yet done.
    pub fn processing_len(&self) -> usize {
        self.lock().processing.len()
    }

    /// Delayed keys (requeue-after and backoff).
    pub fn delayed_len(&self) -> usize {
        self.lock().waiting.len()
    }

    /// How long until the earliest delayed key is due (zero if overdue).
    pub fn next_delayed_in(&self) -> Option<Duration> {
        let state = self.lock();
        let now = Instant::now();
        state
            .waiting
            .keys()
            .next()
            .map(|&(ready, _)| ready.saturating_duration_since(now))
    }

    /// Nothing queued, nothing in flight, and no delayed key due within `bound`.
    pub fn is_idle_within(&self, bound: Duration) -> bool {
        let state = self.lock();
        let horizon = Instant::now() + bound;
        state.queue.is_empty()
            && state.processing.is_empty()
            && state
                .waiting
                .keys()
                .next()
                .is_none_or(|&(ready, _)| ready > horizon)
    }

    /// Every key the queue still owes work: queued, in flight, dirty or delayed.
    /// Sorted by their debug form, without duplicates.
    pub fn pending_keys(&self) -> Vec<K> {
        let state = self.lock();
        let mut keys: Vec<K> = state
            .queue
            .iter()
            .chain(state.processing.keys())
            .chain(state.dirty.keys())
            .chain(state.waiting.values())
            .cloned()
            .collect();
        drop(state);
        keys.sort_by_cached_key(|k| format!("{k:?}"));
        keys.dedup();
        keys
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // The state stays consistent across a panicking metrics hook: every
        // mutation completes before hooks run or is a single call.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// client-go `Add`: true if the key was pushed onto the queue.
    fn enqueue(&self, state: &mut State<K>, key: K, now: Instant) -> bool {
        if state.shutting_down || state.dirty.contains_key(&key) {
            return false;
        }
        self.metrics.added();
        let processing = state.processing.contains_key(&key);
        state.dirty.insert(key.clone(), now);
        if processing {
            return false;
        }
        state.queue.push_back(key);
        self.metrics.depth(state.queue.len());
        true
    }

    fn promote_due(&self, state: &mut State<K>, now: Instant) {
        while let Some(entry) = state.waiting.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let key = entry.remove();
            state.waiting_slot.remove(&key);
            self.enqueue(state, key, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn queue() -> WorkQueue<&'static str> {
        WorkQueue::new(QueueConfig::named("test").without_overall_limit())
    }

    /// `get` that must not wait (the key is due now).
    async fn get_now(q: &WorkQueue<&'static str>) -> Option<&'static str> {
        tokio::time::timeout(Duration::from_millis(1), q.get())
            .await
            .expect("a key should be ready")
    }

    async fn nothing_ready(q: &WorkQueue<&'static str>) -> bool {
        tokio::time::timeout(Duration::from_millis(1), q.get())
            .await
            .is_err()
    }

    #[tokio::test(start_paused = true)]
    async fn keys_come_out_in_order_and_duplicates_collapse() {
        let q = queue();
        q.add("a");
        q.add("b");
        q.add("a");
        assert_eq!(q.len(), 2);
        assert_eq!(get_now(&q).await, Some("a"));
        assert_eq!(get_now(&q).await, Some("b"));
        assert!(nothing_ready(&q).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_being_processed_is_not_handed_out_twice() {
        let q = queue();
        q.add("a");
        assert_eq!(get_now(&q).await, Some("a"));
        q.add("a");
        q.add("a");
        assert_eq!(q.len(), 0, "dirty, not queued, while processing");
        assert!(nothing_ready(&q).await);
        q.done(&"a");
        assert_eq!(get_now(&q).await, Some("a"), "requeued once after done");
        q.done(&"a");
        assert!(nothing_ready(&q).await);
    }

    #[tokio::test(start_paused = true)]
    async fn done_without_new_adds_does_not_requeue() {
        let q = queue();
        q.add("a");
        get_now(&q).await;
        q.done(&"a");
        assert!(q.is_idle_within(Duration::ZERO));
    }

    #[tokio::test(start_paused = true)]
    async fn get_waits_for_an_add() {
        let q = Arc::new(queue());
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.get().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        q.add("late");
        assert_eq!(waiter.await.unwrap(), Some("late"));
    }

    #[tokio::test(start_paused = true)]
    async fn an_add_makes_a_delayed_key_due_now_and_only_once() {
        let q = queue();
        q.add_after("a", Duration::from_secs(1));
        q.add("a");
        assert_eq!(get_now(&q).await, Some("a"));
        q.done(&"a");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(nothing_ready(&q).await, "the delayed copy was not dropped");
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_delays_and_keeps_the_earlier_time() {
        let q = queue();
        let start = Instant::now();
        q.add_after("a", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(30));
        q.add_after("b", Duration::from_secs(20));
        assert_eq!(q.delayed_len(), 2);
        assert_eq!(q.next_delayed_in(), Some(Duration::from_secs(10)));
        assert!(nothing_ready(&q).await);

        assert_eq!(q.get().await, Some("a"));
        assert_eq!(start.elapsed(), Duration::from_secs(10));
        assert_eq!(q.get().await, Some("b"));
        assert_eq!(start.elapsed(), Duration::from_secs(20));
        assert_eq!(q.delayed_len(), 0, "a's later slot was dropped");
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_add_after_replaces_a_later_one() {
        let q = queue();
        q.add_after("a", Duration::from_secs(30));
        q.add_after("a", Duration::from_secs(5));
        assert_eq!(q.next_delayed_in(), Some(Duration::from_secs(5)));
        let start = Instant::now();
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_delay_added_while_get_sleeps_wakes_it_earlier() {
        let q = Arc::new(queue());
        q.add_after("slow", Duration::from_secs(60));
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { (q.get().await, Instant::now()) }
        });
        tokio::task::yield_now().await;
        let start = Instant::now();
        q.add_after("fast", Duration::from_secs(1));
        let (key, at) = waiter.await.unwrap();
        assert_eq!(key, Some("fast"));
        assert_eq!(at.duration_since(start), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limited_adds_back_off_exponentially_until_forgotten() {
        let q = queue();
        for expected_ms in [5, 10, 20, 40] {
            q.add_rate_limited("a");
            assert_eq!(
                q.next_delayed_in(),
                Some(Duration::from_millis(expected_ms))
            );
            let start = Instant::now();
            assert_eq!(q.get().await, Some("a"));
            assert_eq!(start.elapsed(), Duration::from_millis(expected_ms));
            q.done(&"a");
        }
        assert_eq!(q.num_requeues(&"a"), 4);
        q.forget(&"a");
        assert_eq!(q.num_requeues(&"a"), 0);
        q.add_rate_limited("a");
        assert_eq!(q.next_delayed_in(), Some(Duration::from_millis(5)));
    }

    #[tokio::test(start_paused = true)]
    async fn finish_maps_outcomes_to_forget_backoff_and_requeue_after() {
        let q = queue();
        q.add("a");
        get_now(&q).await;
        q.finish(&"a", Outcome::Retry);
        assert_eq!(q.num_requeues(&"a"), 1);
        assert_eq!(q.next_delayed_in(), Some(Duration::from_millis(5)));

        assert_eq!(q.get().await, Some("a"));
        q.finish(&"a", Outcome::RetryAfter(Duration::from_secs(3)));
        assert_eq!(q.num_requeues(&"a"), 0, "requeue-after is a success");
        assert_eq!(q.next_delayed_in(), Some(Duration::from_secs(3)));

        assert_eq!(q.get().await, Some("a"));
        q.finish(&"a", Outcome::Done);
        assert!(q.is_idle_within(Duration::from_secs(3600)));
    }

    #[tokio::test(start_paused = true)]
    async fn the_overall_bucket_spaces_out_retries_across_keys() {
        let q: WorkQueue<u32> = WorkQueue::new(QueueConfig {
            overall: Some(TokenBucketConfig {
                qps: 10.0,
                burst: 1,
            }),
            ..QueueConfig::named("bucket")
        });
        q.add_rate_limited(1);
        assert_eq!(q.next_delayed_in(), Some(Duration::from_millis(5)));
        q.add_rate_limited(2);
        // Key 2 had no failures (5 ms), but the bucket is empty: 100 ms.
        let start = Instant::now();
        assert_eq!(q.get().await, Some(1));
        assert_eq!(q.get().await, Some(2));
        assert_eq!(start.elapsed(), Duration::from_millis(100));
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_drains_queued_keys_then_returns_none() {
        let q = queue();
        q.add("a");
        q.add_after("later", Duration::from_secs(1));
        q.shutdown();
        q.add("ignored");
        q.add_after("ignored too", Duration::from_secs(1));
        assert!(q.is_shutting_down());
        assert_eq!(get_now(&q).await, Some("a"));
        assert_eq!(get_now(&q).await, None);
        assert_eq!(q.delayed_len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_wakes_waiting_workers() {
        let q = Arc::new(queue());
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move { q.get().await })
            })
            .collect();
        tokio::task::yield_now().await;
        q.shutdown();
        for w in waiters {
            assert_eq!(w.await.unwrap(), None);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn idle_and_pending_report_every_kind_of_owed_work() {
        let q = queue();
        assert!(q.is_idle_within(Duration::from_secs(1)));
        q.add("queued");
        q.add("held");
        q.add_after("delayed", Duration::from_secs(10));
        assert_eq!(get_now(&q).await, Some("queued"));
        assert_eq!(q.processing_len(), 1);
        assert!(!q.is_idle_within(Duration::ZERO));
        assert_eq!(q.pending_keys(), ["delayed", "held", "queued"]);

        q.done(&"queued");
        assert_eq!(get_now(&q).await, Some("held"));
        q.done(&"held");
        assert!(
            q.is_idle_within(Duration::from_secs(5)),
            "delay beyond the bound"
        );
        assert!(
            !q.is_idle_within(Duration::from_secs(10)),
            "delay within the bound"
        );
    }

    #[derive(Default)]
    struct Counting {
        added: AtomicUsize,
        retried: AtomicUsize,
        worked: AtomicUsize,
        waited: AtomicUsize,
        max_depth: AtomicUsize,
    }

    impl QueueMetrics for Counting {
        fn added(&self) {
            self.added.fetch_add(1, Ordering::SeqCst);
        }
        fn depth(&self, depth: usize) {
            self.max_depth.fetch_max(depth, Ordering::SeqCst);
        }
        fn queue_duration(&self, waited: Duration) {
            self.waited
                .fetch_add(waited.as_millis() as usize, Ordering::SeqCst);
        }
        fn work_duration(&self, worked: Duration) {
            self.worked
                .fetch_add(worked.as_millis() as usize, Ordering::SeqCst);
        }
        fn retried(&self) {
            self.retried.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn metrics_hooks_see_adds_depth_durations_and_retries() {
        let m = Arc::new(Counting::default());
        let q = WorkQueue::with_metrics(QueueConfig::named("m").without_overall_limit(), m.clone());
        q.add("a");
        q.add("a");
        q.add("b");
        tokio::time::advance(Duration::from_millis(7)).await;
        assert_eq!(q.get().await, Some("a"));
        tokio::time::advance(Duration::from_millis(3)).await;
        q.done(&"a");
        q.add_rate_limited("a");
        assert_eq!(
            m.added.load(Ordering::SeqCst),
            2,
            "the duplicate is not counted"
        );
        assert_eq!(m.max_depth.load(Ordering::SeqCst), 2);
        assert_eq!(m.waited.load(Ordering::SeqCst), 7);
        assert_eq!(m.worked.load(Ordering::SeqCst), 3);
        assert_eq!(m.retried.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn workers_never_run_one_key_concurrently_and_process_everything() {
        /// `workers` tasks taking keys and applying the handler's outcome.
        async fn run_workers<F, Fut>(queue: Arc<WorkQueue<u32>>, workers: usize, handler: F)
        where
            F: Fn(u32) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Outcome> + Send + 'static,
        {
            let handler = Arc::new(handler);
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..workers {
                let (queue, handler) = (queue.clone(), handler.clone());
                tasks.spawn(async move {
                    while let Some(key) = queue.get().await {
                        let outcome = handler(key).await;
                        queue.finish(&key, outcome);
                    }
                });
            }
            while tasks.join_next().await.is_some() {}
        }

        let q = Arc::new(WorkQueue::<u32>::new(
            QueueConfig::named("w").without_overall_limit(),
        ));
        let running: Arc<Mutex<std::collections::HashSet<u32>>> = Arc::default();
        let calls = Arc::new(AtomicUsize::new(0));
        let max_parallel = Arc::new(AtomicUsize::new(0));
        let pool = tokio::spawn(run_workers(q.clone(), 4, {
            let (running, calls, max_parallel, q) = (
                running.clone(),
                calls.clone(),
                max_parallel.clone(),
                q.clone(),
            );
            move |key: u32| {
                let (running, calls, max_parallel, q) = (
                    running.clone(),
                    calls.clone(),
                    max_parallel.clone(),
                    q.clone(),
                );
                async move {
                    let parallel = {
                        let mut r = running.lock().unwrap();
                        assert!(r.insert(key), "key {key} reconciled twice at once");
                        r.len()
                    };
                    max_parallel.fetch_max(parallel, Ordering::SeqCst);
                    // Re-adding the key mid-reconcile must not run it concurrently.
                    q.add(key);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    running.lock().unwrap().remove(&key);
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    // The first reconcile of each key fails once.
                    if n < 8 { Outcome::Retry } else { Outcome::Done }
                }
            }
        }));
        for key in 0..8 {
            q.add(key);
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
        // Each key re-added itself during every reconcile, so work keeps coming;
        // shut down and let the pool drain.
        q.shutdown();
        pool.await.unwrap();
        assert!(calls.load(Ordering::SeqCst) >= 16);
        assert!(max_parallel.load(Ordering::SeqCst) <= 4, "bounded workers");
        assert!(
            max_parallel.load(Ordering::SeqCst) > 1,
            "keys ran in parallel"
        );
        assert_eq!(q.processing_len(), 0);
    }
}
