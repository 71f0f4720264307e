//! [`WorkQueue`]: the lock, the waking of workers, and the public API over [`Locked`].

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::done::Done;
use super::hooks::{NoopHooks, QueueHooks};
use super::locked::{Clock, Locked, Pop, Wake};
use super::priority::Priority;
use super::rate_limiter::{RateLimiter, default_controller_rate_limiter};

/// How long a ready key waits before aging lets it past higher priorities, by default.
pub const DEFAULT_AGING: Duration = Duration::from_secs(10);

/// How to add a key: its priority, a delay, and whether the rate limiter picks the delay.
///
/// ```
/// use std::time::Duration;
/// use kubeward::queue::{AddOptions, Priority, WorkQueue};
///
/// let queue = WorkQueue::new();
/// // From the initial list: after live changes.
/// queue.add_with("default/web", AddOptions::new().priority(Priority::LOW));
/// // Not before 5 s from now.
/// queue.add_with("default/db", AddOptions::new().after(Duration::from_secs(5)));
/// assert_eq!(queue.len(), 1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AddOptions {
    /// The priority to wait at; a key already waiting keeps the higher of its two priorities.
    pub priority: Priority,
    /// How long until the key is ready (zero: now). A key already waiting keeps the earlier of
    /// its two ready times.
    pub after: Duration,
    /// Ask the rate limiter for the delay (and count a retry). With `after` set as well, the
    /// shorter of the two delays is used, as in controller-runtime.
    pub rate_limited: bool,
}

impl AddOptions {
    /// Normal priority, no delay, not rate limited.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the priority.
    #[must_use]
    pub fn priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// Sets the delay.
    #[must_use]
    pub fn after(mut self, delay: Duration) -> Self {
        self.after = delay;
        self
    }

    /// Lets the rate limiter choose the delay.
    #[must_use]
    pub fn rate_limited(mut self) -> Self {
        self.rate_limited = true;
        self
    }
}

/// Configures a [`WorkQueue`]; start from [`WorkQueue::builder`].
pub struct Builder<T> {
    limiter: Option<Box<dyn RateLimiter<T>>>,
    hooks: Arc<dyn QueueHooks>,
    aging: Option<Duration>,
}

impl<T> fmt::Debug for Builder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("custom_rate_limiter", &self.limiter.is_some())
            .field("hooks", &self.hooks)
            .field("aging", &self.aging)
            .finish()
    }
}

impl<T: Hash + Eq + Clone + Send + 'static> Builder<T> {
    /// The rate limiter behind [`WorkQueue::add_rate_limited`] (default:
    /// [`default_controller_rate_limiter`]).
    #[must_use]
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<T> + 'static) -> Self {
        self.limiter = Some(Box::new(limiter));
        self
    }

    /// Where the queue reports its measurements (default: nowhere).
    #[must_use]
    pub fn hooks(mut self, hooks: Arc<dyn QueueHooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// A key ready for `after` is overdue and goes ahead of higher priorities every other turn
    /// (default [`DEFAULT_AGING`]; see [the module docs](crate::queue#priorities-and-aging)).
    #[must_use]
    pub fn aging(mut self, after: Duration) -> Self {
        self.aging = Some(after);
        self
    }

    /// Strict priorities, no aging: a lower priority waits as long as higher ones keep coming
    /// (controller-runtime's behaviour, which can starve it).
    #[must_use]
    pub fn strict_priority(mut self) -> Self {
        self.aging = None;
        self
    }

    /// Builds the queue.
    #[must_use]
    pub fn build(self) -> WorkQueue<T> {
        let limiter = self
            .limiter
            .unwrap_or_else(|| Box::new(default_controller_rate_limiter()));
        let core = Locked::new(limiter, self.hooks, self.aging);
        WorkQueue {
            shared: Arc::new(Shared {
                hasher: core.hasher(),
                core: Mutex::new(core),
                wake: Notify::new(),
                drained: Notify::new(),
                draining: AtomicBool::new(false),
            }),
        }
    }
}

struct Shared<T> {
    core: Mutex<Locked<T>>,
    /// The core's hasher: keys are hashed before the lock is taken.
    hasher: hashbrown::DefaultHashBuilder,
    /// Wakes workers sleeping in `get`.
    wake: Notify,
    /// Wakes `shutdown_with_drain`.
    drained: Notify,
    /// A `shutdown_with_drain` waits; a plain `shutdown` clears it to release the wait.
    draining: AtomicBool,
}

impl<T> Shared<T> {
    /// After unlocking: passes the wake-up on if [`Locked::take`] said so.
    fn handed_out(&self, popped: Pop<T>, pass_on: bool) -> Pop<T> {
        if pass_on {
            self.wake.notify_one();
        }
        popped
    }
}

/// A work queue of keys: deduplicating, delaying, rate limiting and prioritising, for any number
/// of workers. See [the module docs](crate::queue) for the semantics.
///
/// Cloning is cheap and gives another handle to the same queue.
pub struct WorkQueue<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        WorkQueue {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `try_lock`: formatting must not block, nor deadlock inside a hook.
        match self.shared.core.try_lock() {
            Some(core) => f.debug_tuple("WorkQueue").field(&*core).finish(),
            None => f.write_str("WorkQueue { <locked> }"),
        }
    }
}

impl<T: Hash + Eq + Clone + Send + 'static> Default for WorkQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// `(wake, leftover)` to `(leftover, wake)`, the shape [`WorkQueue::change`] takes.
fn swap<T>((wake, leftover): (Wake, Option<T>)) -> (Option<T>, Wake) {
    (leftover, wake)
}

/// Deregisters a sleeping `get` whose future is dropped while it waits.
struct SleepGuard<'a, T> {
    shared: &'a Shared<T>,
    armed: bool,
}

impl<T> Drop for SleepGuard<'_, T> {
    fn drop(&mut self) {
        if self.armed {
            let mut core = self.shared.core.lock();
            core.sleepers -= 1;
            core.woken = core.woken.min(core.sleepers);
        }
    }
}

impl<T: Hash + Eq + Clone + Send + 'static> WorkQueue<T> {
    /// A queue with the default rate limiter, no hooks and [`DEFAULT_AGING`].
    #[must_use]
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// Configures a queue.
    #[must_use]
    pub fn builder() -> Builder<T> {
        Builder {
            limiter: None,
            hooks: Arc::new(NoopHooks),
            aging: Some(DEFAULT_AGING),
        }
    }

    fn hash(&self, key: &T) -> u64 {
        self.shared.hasher.hash_one(key)
    }

    /// Runs `change` under the lock, then wakes whom it asks for. Whatever `change` returns is
    /// dropped after unlocking (a merged key's `free` is no business of the lock's).
    fn change<R>(&self, change: impl FnOnce(&mut Locked<T>, &mut Clock) -> (R, Wake)) -> R {
        let mut clock = Clock::default();
        let (out, wake, drained) = {
            let mut core = self.shared.core.lock();
            let (out, wake) = change(&mut core, &mut clock);
            let wake = match wake {
                Wake::One if core.wake_one() => Wake::One,
                Wake::One | Wake::None => Wake::None,
                Wake::All => Wake::All,
            };
            (out, wake, core.is_drained())
        };
        match wake {
            Wake::None => {}
            Wake::One => self.shared.wake.notify_one(),
            Wake::All => self.shared.wake.notify_waiters(),
        }
        if drained {
            self.shared.drained.notify_waiters();
        }
        out
    }

    /// Adds `key`, ready now. A key already waiting is not added twice; a key being processed is
    /// handed out again once it is [`done`](Self::done). Ignored after [`shutdown`](Self::shutdown).
    pub fn add(&self, key: T) {
        let hash = self.hash(&key);
        self.change(|core, clock| {
            swap(core.add(key, hash, Priority::NORMAL, Duration::ZERO, clock))
        });
    }

    /// Adds `key`, ready after `delay`. A key already waiting keeps the earlier ready time.
    pub fn add_after(&self, key: T, delay: Duration) {
        let hash = self.hash(&key);
        self.change(|core, clock| swap(core.add(key, hash, Priority::NORMAL, delay, clock)));
    }

    /// Adds `key` after the delay the rate limiter gives it, counting a retry.
    pub fn add_rate_limited(&self, key: T) {
        let hash = self.hash(&key);
        self.change(|core, clock| swap(core.add_rate_limited(key, hash, Priority::NORMAL, clock)));
    }

    /// Adds `key` with a priority, a delay, or a rate-limited delay.
    pub fn add_with(&self, key: T, options: AddOptions) {
        let hash = self.hash(&key);
        self.change(|core, clock| {
            swap(if options.rate_limited {
                if options.after.is_zero() {
                    core.add_rate_limited(key, hash, options.priority, clock)
                } else {
                    core.add_rate_limited_at_most(key, hash, options.priority, options.after, clock)
                }
            } else {
                core.add(key, hash, options.priority, options.after, clock)
            })
        });
    }

    /// Waits for the next ready key and marks it as being processed: no other worker gets it
    /// until you call [`done`](Self::done) with it. `None` once the queue is shut down and has
    /// nothing left to hand out.
    ///
    /// Cancel safe: dropping the future before it completes loses no key.
    pub async fn get(&self) -> Option<T> {
        let shared = &*self.shared;
        let (popped, pass_on) = shared.core.lock().take();
        match shared.handed_out(popped, pass_on) {
            Pop::Key(key) => return Some(key),
            Pop::Closed => return None,
            Pop::Empty(_) => {}
        }
        // Nothing ready: sleep at once. Yielding to look once more first (which can save a
        // wake-up) makes a worker on one thread race an adder on another for the lock key by
        // key; woken instead by an adder's notification, it waits behind the adder's task (in
        // tokio's LIFO slot) and then takes the keys added meanwhile without contention.
        //
        // Register for a wake-up *before* looking again, so that an add between the look and the
        // wait cannot be missed (tokio's `Notified::enable`); the look and the registration
        // share one lock.
        //
        // `sleepers` counts the gets registered to be woken, `woken` the wake-ups sent to them
        // and not yet received. At most one wake-up is on its way at a time (see
        // `Locked::wake_one`): a woken worker that takes a key passes the wake-up on to the next
        // sleeper if more keys are ready, so sleepers are woken one by one as long as there is
        // work, not all at once by a burst of adds. Every notification received (by waiting, or
        // already stored when registering) decrements `woken`, so it never overstates what is on
        // its way; it may understate, which costs a spare wake-up.
        let mut woke: Option<bool> = None;
        loop {
            let mut notified = pin!(shared.wake.notified());
            let absorbed = notified.as_mut().enable();
            let (popped, pass_on) = {
                let mut core = shared.core.lock();
                if let Some(by_notify) = woke.take() {
                    core.sleepers -= 1;
                    if by_notify {
                        core.woken = core.woken.saturating_sub(1);
                    }
                }
                if absorbed {
                    core.woken = core.woken.saturating_sub(1);
                }
                core.woken = core.woken.min(core.sleepers);
                let (popped, pass_on) = core.take();
                if matches!(popped, Pop::Empty(_)) && !absorbed {
                    core.sleepers += 1;
                }
                (popped, pass_on)
            };
            let deadline = match shared.handed_out(popped, pass_on) {
                Pop::Key(key) => return Some(key),
                Pop::Closed => return None,
                // The wake-up was taken on registering: look again with a fresh registration.
                Pop::Empty(_) if absorbed => continue,
                Pop::Empty(deadline) => deadline,
            };
            let mut guard = SleepGuard {
                shared,
                armed: true,
            };
            let by_notify = if let Some(at) = deadline {
                tokio::select! {
                    biased;
                    () = notified.as_mut() => true,
                    () = tokio::time::sleep_until(at) => false,
                }
            } else {
                notified.as_mut().await;
                true
            };
            // No await from here to the next lock: the bookkeeping cannot be cancelled.
            guard.armed = false;
            woke = Some(by_notify);
        }
    }

    /// Marks `key` as processed. If it was added while being processed, it becomes ready again
    /// (or delayed, if it was added with a delay). A key that is not being processed is left
    /// alone. Returns what became of it; one lock, and the queue's copy of a removed key is
    /// freed on the calling thread after unlocking.
    #[allow(
        clippy::must_use_candidate,
        reason = "most callers only finish the key; the outcome is for those who want it"
    )]
    pub fn done(&self, key: &T) -> Done {
        let hash = self.hash(key);
        let (done, removed) = self.change(|core, clock| {
            let (wake, done, removed) = core.done(key, hash, clock);
            ((done, removed), wake)
        });
        drop(removed);
        done
    }

    /// [`forget`](Self::forget) and [`done`](Self::done) under one lock, for a worker that
    /// finished a key successfully.
    pub(crate) fn forget_and_done(&self, key: &T) -> Done {
        let hash = self.hash(key);
        let (done, removed) = self.change(|core, clock| {
            core.forget(key);
            let (wake, done, removed) = core.done(key, hash, clock);
            ((done, removed), wake)
        });
        drop(removed);
        done
    }

    /// Forgets `key`'s failures in the rate limiter (call after processing it successfully). It
    /// does not remove the key from the queue.
    pub fn forget(&self, key: &T) {
        self.shared.core.lock().forget(key);
    }

    /// How many times `key` was added rate-limited since it was last forgotten.
    #[must_use]
    pub fn num_requeues(&self, key: &T) -> u32 {
        self.shared.core.lock().num_requeues(key)
    }

    /// The number of ready keys (delayed keys and keys being processed not included).
    #[must_use]
    pub fn len(&self) -> usize {
        self.shared.core.lock().len(&mut Clock::default())
    }

    /// Whether no key is ready.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Room in the key table (for tests).
    #[cfg(test)]
    pub(super) fn key_capacity(&self) -> usize {
        self.shared.core.lock().key_capacity()
    }

    /// Workers sleeping in `get`, and wake-ups on their way to them (for tests).
    #[cfg(test)]
    pub(super) fn sleepers_and_wake_ups(&self) -> (usize, usize) {
        let core = self.shared.core.lock();
        (core.sleepers, core.woken)
    }

    /// The number of keys being processed.
    #[must_use]
    pub fn num_processing(&self) -> usize {
        self.shared.core.lock().processing()
    }

    /// The number of keys waiting for their delay.
    #[must_use]
    pub fn num_delayed(&self) -> usize {
        self.shared.core.lock().delayed()
    }

    /// Reports the unfinished work and the longest running processor to the hooks. client-go
    /// does this every 500 ms; whoever owns the hooks calls it as often as they like.
    pub fn update_unfinished_work(&self) {
        self.shared
            .core
            .lock()
            .update_unfinished_work(&mut Clock::default());
    }

    /// Stops the queue: adds are ignored from now on and delayed keys are dropped, but keys that
    /// are ready, and keys being processed that were added again, are still handed out; then
    /// [`get`](Self::get) returns `None`. A [`shutdown_with_drain`](Self::shutdown_with_drain)
    /// that is waiting returns at once.
    pub fn shutdown(&self) {
        // Like client-go's `ShutDown` after `ShutDownWithDrain`: a forced shutdown stops waiting.
        self.shared.draining.store(false, Ordering::SeqCst);
        self.stop();
        self.shared.drained.notify_waiters();
    }

    /// [`shutdown`](Self::shutdown), then waits until the workers have processed every key that
    /// was still ready or being processed. It only finishes if workers keep calling `get` and
    /// `done`, or when [`shutdown`](Self::shutdown) is called meanwhile (a forced shutdown,
    /// which returns it at once): put a timeout around it.
    pub async fn shutdown_with_drain(&self) {
        self.shared.draining.store(true, Ordering::SeqCst);
        self.stop();
        loop {
            let mut drained = pin!(self.shared.drained.notified());
            drained.as_mut().enable();
            if self.shared.core.lock().is_drained() || !self.shared.draining.load(Ordering::SeqCst)
            {
                return;
            }
            drained.await;
        }
    }

    fn stop(&self) {
        self.change(|core, clock| {
            core.shutdown(clock);
            ((), Wake::All)
        });
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    #[must_use]
    pub fn is_shutting_down(&self) -> bool {
        self.shared.core.lock().is_shutting_down()
    }
}
