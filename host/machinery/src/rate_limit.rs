//! The work queue's rate limiters, client-go's default controller limiter: per-key
//! exponential backoff combined (max of the two delays) with an optional overall
//! token bucket. Pure state machines: time is passed in, so tests need no clock.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

/// Per-key exponential backoff: `base * 2^failures`, capped at `max`.
#[derive(Debug)]
pub struct ItemBackoff<K> {
    base: Duration,
    max: Duration,
    failures: HashMap<K, u32>,
}

impl<K: Eq + Hash> ItemBackoff<K> {
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: HashMap::new(),
        }
    }

    /// The delay for this failure of `key`; counts the failure.
    pub fn next_delay(&mut self, key: K) -> Duration {
        let failures = self.failures.entry(key).or_insert(0);
        let exponent = *failures;
        *failures = failures.saturating_add(1);
        // 2^exponent overflows u64 long before the cap; u128 nanos with saturation do not.
        let delay = if exponent >= 64 {
            u128::MAX
        } else {
            self.base.as_nanos().saturating_mul(1u128 << exponent)
        };
        if delay >= self.max.as_nanos() {
            self.max
        } else {
            Duration::from_nanos(delay as u64)
        }
    }

    /// Success: the next failure starts again at `base`.
    pub fn forget(&mut self, key: &K) {
        self.failures.remove(key);
    }

    /// How often `key` failed since it was last forgotten.
    pub fn failures(&self, key: &K) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }
}

/// Overall limit: `qps` tokens per second, at most `burst` saved up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBucketConfig {
    pub qps: f64,
    pub burst: u32,
}

/// A token bucket with reservation semantics (golang.org/x/time/rate `Reserve`):
/// every call takes a token, possibly borrowed from the future, and returns how long
/// the caller must wait until that token exists.
#[derive(Debug)]
pub struct TokenBucket {
    config: TokenBucketConfig,
    tokens: f64,
    updated: Instant,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(config: TokenBucketConfig, now: Instant) -> Self {
        Self {
            config,
            tokens: f64::from(config.burst),
            updated: now,
        }
    }

    pub fn reserve(&mut self, now: Instant) -> Duration {
        if now > self.updated {
            let refill = now.duration_since(self.updated).as_secs_f64() * self.config.qps;
            self.tokens = (self.tokens + refill).min(f64::from(self.config.burst));
            self.updated = now;
        }
        self.tokens -= 1.0;
        if self.tokens >= 0.0 || self.config.qps <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.config.qps)
        }
    }
}

/// Per-key backoff, and optionally the overall bucket; the longer delay wins.
#[derive(Debug)]
pub struct RateLimiter<K> {
    backoff: ItemBackoff<K>,
    bucket: Option<TokenBucket>,
}

impl<K: Eq + Hash> RateLimiter<K> {
    pub fn new(
        base: Duration,
        max: Duration,
        overall: Option<TokenBucketConfig>,
        now: Instant,
    ) -> Self {
        Self {
            backoff: ItemBackoff::new(base, max),
            bucket: overall.map(|c| TokenBucket::new(c, now)),
        }
    }

    pub fn when(&mut self, key: K, now: Instant) -> Duration {
        let item = self.backoff.next_delay(key);
        let overall = self
            .bucket
            .as_mut()
            .map_or(Duration::ZERO, |b| b.reserve(now));
        item.max(overall)
    }

    pub fn forget(&mut self, key: &K) {
        self.backoff.forget(key);
    }

    pub fn failures(&self, key: &K) -> u32 {
        self.backoff.failures(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn backoff_doubles_from_base_per_key() {
        let mut b = ItemBackoff::new(5 * MS, Duration::from_secs(1000));
        assert_eq!(b.next_delay("a"), 5 * MS);
        assert_eq!(b.next_delay("a"), 10 * MS);
        assert_eq!(b.next_delay("a"), 20 * MS);
        assert_eq!(b.next_delay("b"), 5 * MS, "keys back off independently");
        assert_eq!(b.failures(&"a"), 3);
    }

    #[test]
    fn backoff_caps_at_max_and_never_overflows() {
        let mut b = ItemBackoff::new(5 * MS, Duration::from_secs(1000));
        // 5ms * 2^17 = 655 s; 2^18 = 1310 s > cap.
        let delays: Vec<Duration> = (0..19).map(|_| b.next_delay("k")).collect();
        assert_eq!(delays[17], Duration::from_millis(5 << 17));
        assert_eq!(delays[18], Duration::from_secs(1000));
        for _ in 0..2000 {
            assert_eq!(b.next_delay("k"), Duration::from_secs(1000));
        }
    }

    #[test]
    fn forget_resets_the_backoff() {
        let mut b = ItemBackoff::new(5 * MS, Duration::from_secs(1000));
        b.next_delay("a");
        b.next_delay("a");
        b.forget(&"a");
        assert_eq!(b.failures(&"a"), 0);
        assert_eq!(b.next_delay("a"), 5 * MS);
    }

    #[test]
    fn bucket_allows_a_burst_then_spaces_reservations() {
        let t0 = Instant::now();
        let mut bucket = TokenBucket::new(
            TokenBucketConfig {
                qps: 10.0,
                burst: 2,
            },
            t0,
        );
        assert_eq!(bucket.reserve(t0), Duration::ZERO);
        assert_eq!(bucket.reserve(t0), Duration::ZERO);
        assert_eq!(bucket.reserve(t0), 100 * MS);
        assert_eq!(bucket.reserve(t0), 200 * MS, "reservations queue up");
        // 1 s later the debt (2 tokens) is repaid and the bucket refilled to burst.
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(bucket.reserve(t1), Duration::ZERO);
        assert_eq!(bucket.reserve(t1), Duration::ZERO);
        assert_eq!(bucket.reserve(t1), 100 * MS);
    }

    #[test]
    fn limiter_takes_the_longer_of_backoff_and_bucket() {
        let t0 = Instant::now();
        let overall = TokenBucketConfig { qps: 1.0, burst: 1 };
        let mut l = RateLimiter::new(5 * MS, Duration::from_secs(1000), Some(overall), t0);
        assert_eq!(l.when("a", t0), 5 * MS, "bucket has a token: backoff wins");
        assert_eq!(
            l.when("b", t0),
            Duration::from_secs(1),
            "bucket empty: it wins"
        );

        let mut unlimited = RateLimiter::new(5 * MS, Duration::from_secs(1000), None, t0);
        for _ in 0..500 {
            unlimited.when("x", t0);
        }
        assert_eq!(unlimited.when("y", t0), 5 * MS, "no overall limit");
    }
}
