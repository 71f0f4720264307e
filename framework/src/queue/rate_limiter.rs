//! Rate limiters: how long a key waits before it is retried.
//!
//! The same family as client-go's `workqueue` rate limiters, with the same numbers:
//!
//! | limiter | delay for a key | client-go |
//! | --- | --- | --- |
//! | [`ExponentialBackoff`] | `base * 2^failures`, at most `max` (per key) | `ItemExponentialFailureRateLimiter` |
//! | [`TokenBucket`] | the wait for a token: `qps` per second, `burst` at once (all keys) | `BucketRateLimiter` |
//! | [`FastSlow`] | `fast` for the first `max_fast` failures, then `slow` (per key) | `ItemFastSlowRateLimiter` |
//! | [`MaxOf`] | the longest of its limiters' delays | `MaxOfRateLimiter` |
//!
//! [`default_controller_rate_limiter`] is client-go's `DefaultControllerRateLimiter`: the maximum of
//! a per-key exponential backoff from 5 ms doubling up to 1000 s and an overall bucket of 10 qps
//! with a burst of 100.
//!
//! Write your own by implementing [`RateLimiter`]. The queue calls it with its lock held, so it
//! gets `&mut self` and needs no locking of its own; keep it quick.

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use hashbrown::HashMap;
use tokio::time::Instant;

/// Decides how long a key waits before it is retried, counting its failures.
pub trait RateLimiter<T>: Send {
    /// Records a failure of `item` and returns how long it must wait before its retry. `now` is
    /// the queue's clock (`tokio::time::Instant::now()`, so tests can pause it).
    fn when(&mut self, item: &T, now: Instant) -> Duration;

    /// Forgets `item`'s failures: call after it was processed successfully.
    fn forget(&mut self, item: &T);

    /// How many times `item` has been retried since it was last forgotten.
    fn num_requeues(&self, item: &T) -> u32;
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<R> {
    fn when(&mut self, item: &T, now: Instant) -> Duration {
        (**self).when(item, now)
    }

    fn forget(&mut self, item: &T) {
        (**self).forget(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

/// Per-key exponential backoff: `base * 2^failures`, capped at `max`.
///
/// With client-go's numbers (5 ms, 1000 s) a key waits 5 ms, 10 ms, 20 ms, … 655.36 s, then
/// 1000 s from its 19th failure on.
pub struct ExponentialBackoff<T> {
    base: Duration,
    max: Duration,
    failures: HashMap<T, u32>,
}

impl<T> ExponentialBackoff<T> {
    /// Backoff from `base`, doubling per failure, never more than `max`.
    #[must_use]
    pub fn new(base: Duration, max: Duration) -> Self {
        ExponentialBackoff {
            base,
            max,
            failures: HashMap::new(),
        }
    }
}

impl<T> fmt::Debug for ExponentialBackoff<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExponentialBackoff")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("keys", &self.failures.len())
            .finish()
    }
}

impl<T: Hash + Eq + Clone + Send> RateLimiter<T> for ExponentialBackoff<T> {
    fn when(&mut self, item: &T, _now: Instant) -> Duration {
        let failures = match self.failures.get_mut(item) {
            Some(n) => n,
            None => self.failures.entry(item.clone()).or_insert(0),
        };
        let exp = *failures;
        *failures = failures.saturating_add(1);
        if exp >= 64 {
            return self.max;
        }
        // `base` fits in u64 nanoseconds for any sane value; the shift cannot overflow u128.
        let nanos = self.base.as_nanos() << exp;
        if nanos >= self.max.as_nanos() {
            return self.max;
        }
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    fn forget(&mut self, item: &T) {
        self.failures.remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.get(item).copied().unwrap_or(0)
    }
}

/// A token bucket shared by all keys: `qps` tokens a second, at most `burst` saved up.
///
/// Each retry takes a token; with none left it waits for the token it reserved (golang.org/x/time's
/// `Limiter.Reserve().Delay()`, which client-go's `BucketRateLimiter` uses). It counts no
/// failures: [`num_requeues`](RateLimiter::num_requeues) is always 0.
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Option<Instant>,
}

impl TokenBucket {
    /// `qps` tokens a second, `burst` at once; the bucket starts full.
    #[must_use]
    pub fn new(qps: f64, burst: u32) -> Self {
        TokenBucket {
            qps,
            burst: f64::from(burst),
            tokens: f64::from(burst),
            last: None,
        }
    }
}

impl<T> RateLimiter<T> for TokenBucket {
    fn when(&mut self, _item: &T, now: Instant) -> Duration {
        if let Some(last) = self.last {
            // A clock that went backwards refills nothing.
            let elapsed = now.saturating_duration_since(last).as_secs_f64();
            self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        }
        self.last = Some(self.last.map_or(now, |last| last.max(now)));
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            return Duration::ZERO;
        }
        if self.qps <= 0.0 {
            return Duration::MAX;
        }
        Duration::try_from_secs_f64(-self.tokens / self.qps).unwrap_or(Duration::MAX)
    }

    fn forget(&mut self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// Per key: `fast` for the first `max_fast` failures, `slow` after that.
pub struct FastSlow<T> {
    fast: Duration,
    slow: Duration,
    max_fast: u32,
    failures: HashMap<T, u32>,
}

impl<T> FastSlow<T> {
    /// Waits `fast` for a key's first `max_fast` failures, then `slow`.
    #[must_use]
    pub fn new(fast: Duration, slow: Duration, max_fast: u32) -> Self {
        FastSlow {
            fast,
            slow,
            max_fast,
            failures: HashMap::new(),
        }
    }
}

impl<T> fmt::Debug for FastSlow<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FastSlow")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast", &self.max_fast)
            .field("keys", &self.failures.len())
            .finish()
    }
}

impl<T: Hash + Eq + Clone + Send> RateLimiter<T> for FastSlow<T> {
    fn when(&mut self, item: &T, _now: Instant) -> Duration {
        let failures = match self.failures.get_mut(item) {
            Some(n) => n,
            None => self.failures.entry(item.clone()).or_insert(0),
        };
        *failures = failures.saturating_add(1);
        if *failures <= self.max_fast {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&mut self, item: &T) {
        self.failures.remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.get(item).copied().unwrap_or(0)
    }
}

/// The longest delay of several limiters; every limiter records every failure.
pub struct MaxOf<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOf<T> {
    /// The maximum of `limiters` (no limiters: no delay).
    #[must_use]
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        MaxOf { limiters }
    }
}

impl<T> fmt::Debug for MaxOf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOf")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> RateLimiter<T> for MaxOf<T> {
    fn when(&mut self, item: &T, now: Instant) -> Duration {
        self.limiters
            .iter_mut()
            .map(|l| l.when(item, now))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    fn forget(&mut self, item: &T) {
        for l in &mut self.limiters {
            l.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// client-go's `DefaultControllerRateLimiter`: the maximum of a per-key [`ExponentialBackoff`]
/// (5 ms doubling up to 1000 s) and an overall [`TokenBucket`] (10 qps, burst 100).
#[must_use]
pub fn default_controller_rate_limiter<T: Hash + Eq + Clone + Send + 'static>() -> MaxOf<T> {
    MaxOf::new(vec![
        Box::new(ExponentialBackoff::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(TokenBucket::new(10.0, 100)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn exponential_matches_client_go() {
        let now = Instant::now();
        let mut l = ExponentialBackoff::new(5 * MS, Duration::from_secs(1000));
        // client-go's TestItemExponentialFailureRateLimiter uses 1 ms / 1 s; these are the
        // default controller numbers: 5 ms doubling, capped at 1000 s.
        let expected_ms = [5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10_240];
        for ms in expected_ms {
            assert_eq!(l.when(&"one", now), ms * MS);
        }
        assert_eq!(l.num_requeues(&"one"), 12);
        // 5 ms * 2^17 = 655.36 s is the last uncapped delay; 2^18 would be 1310.72 s.
        for _ in 12..17 {
            l.when(&"one", now);
        }
        assert_eq!(l.when(&"one", now), Duration::from_millis(655_360));
        assert_eq!(l.when(&"one", now), Duration::from_secs(1000));
        for _ in 0..100 {
            assert_eq!(l.when(&"one", now), Duration::from_secs(1000));
        }
        // Keys are independent; forget resets.
        assert_eq!(l.when(&"two", now), 5 * MS);
        assert_eq!(l.when(&"two", now), 10 * MS);
        l.forget(&"one");
        assert_eq!(l.num_requeues(&"one"), 0);
        assert_eq!(l.when(&"one", now), 5 * MS);
        assert_eq!(l.num_requeues(&"two"), 2);
    }

    #[test]
    fn exponential_client_go_unit_test_numbers() {
        // client-go: NewItemExponentialFailureRateLimiter(1ms, 1s): 1, 2, 4, 8, 16 ms.
        let now = Instant::now();
        let mut l = ExponentialBackoff::new(MS, Duration::from_secs(1));
        for ms in [1, 2, 4, 8, 16] {
            assert_eq!(l.when(&"one", now), ms * MS);
        }
        assert_eq!(l.num_requeues(&"one"), 5);
        // ...and 1 s once 2^n ms passes it.
        for _ in 5..10 {
            l.when(&"one", now);
        }
        assert_eq!(l.when(&"one", now), Duration::from_secs(1));
    }

    #[test]
    fn bucket_matches_client_go() {
        let t0 = Instant::now();
        let mut l = TokenBucket::new(10.0, 100);
        // The burst of 100 goes through at once...
        for _ in 0..100 {
            assert_eq!(RateLimiter::<&str>::when(&mut l, &"k", t0), Duration::ZERO);
        }
        // ...then each retry reserves the next token, 100 ms apart.
        assert_eq!(RateLimiter::<&str>::when(&mut l, &"k", t0), 100 * MS);
        assert_eq!(RateLimiter::<&str>::when(&mut l, &"k", t0), 200 * MS);
        assert_eq!(RateLimiter::<&str>::when(&mut l, &"k", t0), 300 * MS);
        // One second later 10 tokens were refilled but 3 were already owed.
        let t1 = t0 + Duration::from_secs(1);
        for _ in 0..7 {
            assert_eq!(RateLimiter::<&str>::when(&mut l, &"k", t1), Duration::ZERO);
        }
        assert_eq!(RateLimiter::<&str>::when(&mut l, &"k", t1), 100 * MS);
        // A long pause refills at most the burst.
        let t2 = t1 + Duration::from_secs(3600);
        for _ in 0..100 {
            assert_eq!(RateLimiter::<&str>::when(&mut l, &"k", t2), Duration::ZERO);
        }
        assert_eq!(RateLimiter::<&str>::when(&mut l, &"k", t2), 100 * MS);
        assert_eq!(RateLimiter::<&str>::num_requeues(&l, &"k"), 0);
    }

    #[test]
    fn fast_slow_matches_client_go() {
        // client-go's TestItemFastSlowRateLimiter: 5 ms fast, 10 s slow, 3 fast attempts.
        let now = Instant::now();
        let mut l = FastSlow::new(5 * MS, Duration::from_secs(10), 3);
        assert_eq!(l.when(&"one", now), 5 * MS);
        assert_eq!(l.when(&"one", now), 5 * MS);
        assert_eq!(l.when(&"one", now), 5 * MS);
        assert_eq!(l.when(&"one", now), Duration::from_secs(10));
        assert_eq!(l.when(&"one", now), Duration::from_secs(10));
        assert_eq!(l.num_requeues(&"one"), 5);
        assert_eq!(l.when(&"two", now), 5 * MS);
        assert_eq!(l.when(&"two", now), 5 * MS);
        assert_eq!(l.num_requeues(&"two"), 2);
        l.forget(&"one");
        assert_eq!(l.num_requeues(&"one"), 0);
        assert_eq!(l.when(&"one", now), 5 * MS);
    }

    #[test]
    fn max_of_matches_client_go() {
        // client-go's TestMaxOfRateLimiter: fast-slow(5 ms, 3 s, 3) and fast-slow(3 ms, 1 s, 1).
        let now = Instant::now();
        let mut l = MaxOf::new(vec![
            Box::new(FastSlow::new(5 * MS, Duration::from_secs(3), 3)),
            Box::new(FastSlow::new(3 * MS, Duration::from_secs(1), 1)),
        ]);
        assert_eq!(l.when(&"one", now), 5 * MS);
        assert_eq!(l.when(&"one", now), Duration::from_secs(1));
        assert_eq!(l.when(&"one", now), Duration::from_secs(1));
        assert_eq!(l.when(&"one", now), Duration::from_secs(3));
        assert_eq!(l.when(&"one", now), Duration::from_secs(3));
        assert_eq!(l.num_requeues(&"one"), 5);
        assert_eq!(l.when(&"two", now), 5 * MS);
        assert_eq!(l.when(&"two", now), Duration::from_secs(1));
        assert_eq!(l.num_requeues(&"two"), 2);
        l.forget(&"one");
        assert_eq!(l.num_requeues(&"one"), 0);
        assert_eq!(l.when(&"one", now), 5 * MS);
        assert_eq!(MaxOf::<u8>::new(vec![]).when(&1, now), Duration::ZERO);
    }

    #[test]
    fn default_controller_limiter() {
        let t0 = Instant::now();
        let mut l = default_controller_rate_limiter::<u32>();
        // Within the burst the per-key backoff decides.
        assert_eq!(l.when(&1, t0), 5 * MS);
        assert_eq!(l.when(&1, t0), 10 * MS);
        assert_eq!(l.num_requeues(&1), 2);
        // Past the burst of 100 (2 used above) the bucket's delay wins over a fresh key's 5 ms.
        for k in 2..100 {
            assert_eq!(l.when(&k, t0), 5 * MS);
        }
        assert_eq!(l.when(&100, t0), 100 * MS);
        assert_eq!(l.when(&101, t0), 200 * MS);
        // The backoff wins once it is longer: key 1's third failure wants 20 ms, the bucket 300 ms.
        assert_eq!(l.when(&1, t0), 300 * MS);
        l.forget(&1);
        assert_eq!(l.num_requeues(&1), 0);
    }
}
