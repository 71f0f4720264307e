//! The queue's state, behind its one lock: a map from key to state, the ready queue and the delay
//! heap. Everything here is synchronous; [`super::WorkQueue`] adds the lock and the waking.
//!
//! A key is in exactly one of these states (absent keys have no entry):
//!
//! | state | in the ready queue | in the delay heap | `get` can return it |
//! | --- | --- | --- | --- |
//! | `Ready` | one valid slot | maybe stale entries | yes |
//! | `Delayed { at }` | maybe stale slots | an entry at `at` | once `at` has passed |
//! | `Processing { requeue }` | maybe stale slots | maybe stale entries | no; `done` requeues it if it was added meanwhile |

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::delay::DelayHeap;
use super::hooks::QueueHooks;
use super::priority::{Priority, ReadyQueue};
use super::rate_limiter::RateLimiter;

/// The longest delay the queue keeps; longer ones are cut to this (about 30 years).
const MAX_DELAY: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

/// Reads the clock at most once per lock hold, and only if needed.
#[derive(Debug, Default)]
pub(super) struct Clock(Option<Instant>);

impl Clock {
    pub(super) fn now(&mut self) -> Instant {
        *self.0.get_or_insert_with(Instant::now)
    }
}

/// What a processing key does when it is `done`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Requeue {
    No,
    Now,
    At(Instant),
}

#[derive(Debug)]
enum State {
    Ready { seq: u64 },
    Delayed { at: Instant },
    Processing { start: u32, requeue: Requeue },
}

#[derive(Debug)]
struct Entry {
    state: State,
    /// The priority it waits at (the highest it was added with since it last started
    /// processing).
    priority: Priority,
}

/// The outcome of [`Core::pop`].
#[derive(Debug)]
pub(super) enum Pop<T> {
    /// A key to process.
    Key(T),
    /// Nothing ready; the earliest time a delayed key may become ready.
    Empty(Option<Instant>),
    /// Shut down and nothing left to hand out.
    Closed,
}

/// What a change asks of the waiting workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wake {
    /// Nothing.
    None,
    /// A key became ready or the earliest delay got earlier: one sleeper should look.
    One,
    /// The queue is shut down and drained of ready keys: every sleeper should return.
    All,
}

/// Starting times of keys being processed, in a slab indexed by `State::Processing::start`.
#[derive(Debug, Default)]
struct Starts {
    slots: Vec<Option<Instant>>,
    free: Vec<u32>,
}

impl Starts {
    fn insert(&mut self, at: Instant) -> u32 {
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = Some(at);
            i
        } else {
            self.slots.push(Some(at));
            u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 keys processed at once")
        }
    }

    fn remove(&mut self, i: u32) -> Option<Instant> {
        let at = self.slots.get_mut(i as usize)?.take();
        self.free.push(i);
        at
    }
}

pub(super) struct Core<T> {
    entries: HashMap<T, Entry>,
    ready: ReadyQueue<T>,
    delayed: DelayHeap<T>,
    limiter: Box<dyn RateLimiter<T>>,
    hooks: Arc<dyn QueueHooks>,
    /// Sequence numbers tell a key's current ready slot from stale ones.
    seq: u64,
    /// Keys being processed.
    processing: usize,
    /// Keys being processed that were added again without a delay.
    requeue_now: usize,
    starts: Starts,
    shutting_down: bool,
    /// Workers registered to be woken (see `WorkQueue::get`).
    pub(super) sleepers: usize,
    /// Wake-ups sent to sleepers that they have not acted on yet.
    pub(super) woken: usize,
}

impl<T> std::fmt::Debug for Core<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("ready", &self.ready.len())
            .field("processing", &self.processing)
            .field("keys", &self.entries.len())
            .field("shutting_down", &self.shutting_down)
            .finish_non_exhaustive()
    }
}

impl<T: Hash + Eq + Clone> Core<T> {
    pub(super) fn new(
        limiter: Box<dyn RateLimiter<T>>,
        hooks: Arc<dyn QueueHooks>,
        aging: Option<Duration>,
    ) -> Self {
        Core {
            entries: HashMap::new(),
            ready: ReadyQueue::new(aging),
            delayed: DelayHeap::new(),
            limiter,
            hooks,
            seq: 0,
            processing: 0,
            requeue_now: 0,
            starts: Starts::default(),
            shutting_down: false,
            sleepers: 0,
            woken: 0,
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Queues `key` as ready; the caller has set its state to `Ready { seq }`.
    fn push_ready(&mut self, key: T, priority: Priority, seq: u64, ready_at: Instant) {
        let depth = self.ready.push(priority, key, seq, ready_at);
        self.hooks.add(priority);
        self.hooks.depth(priority, depth);
    }

    /// Adds `key` at `priority`, ready after `delay`.
    pub(super) fn add(&mut self, key: T, priority: Priority, delay: Duration, clock: &mut Clock) -> Wake {
        if self.shutting_down {
            return Wake::None;
        }
        let at = (!delay.is_zero()).then(|| clock.now() + delay.min(MAX_DELAY));
        let Some(entry) = self.entries.get_mut(&key) else {
            // The common new-key path: one clone, for the ready slot or the heap entry.
            let queued = key.clone();
            return match at {
                None => {
                    let seq = self.next_seq();
                    self.entries.insert(key, Entry { state: State::Ready { seq }, priority });
                    self.push_ready(queued, priority, seq, clock.now());
                    Wake::One
                }
                Some(at) => {
                    self.entries.insert(key, Entry { state: State::Delayed { at }, priority });
                    if self.delayed.push(at, queued) { Wake::One } else { Wake::None }
                }
            };
        };
        // The key is known: merge. The owned `key` is only moved into a new slot or heap entry.
        match &mut entry.state {
            State::Ready { seq } => {
                if priority > entry.priority {
                    // Move to the higher level; the old slot goes stale.
                    let old = entry.priority;
                    entry.priority = priority;
                    self.seq += 1;
                    *seq = self.seq;
                    let seq = self.seq;
                    let depth = self.ready.invalidate(old);
                    self.hooks.depth(old, depth);
                    let depth = self.ready.push(priority, key, seq, clock.now());
                    self.hooks.depth(priority, depth);
                }
                Wake::None
            }
            State::Delayed { at: old_at } => {
                entry.priority = entry.priority.max(priority);
                match at {
                    None => {
                        self.seq += 1;
                        let seq = self.seq;
                        entry.state = State::Ready { seq };
                        let priority = entry.priority;
                        self.note_stale_delay();
                        self.push_ready(key, priority, seq, clock.now());
                        Wake::One
                    }
                    Some(at) if at < *old_at => {
                        *old_at = at;
                        self.note_stale_delay();
                        if self.delayed.push(at, key) { Wake::One } else { Wake::None }
                    }
                    Some(_) => Wake::None,
                }
            }
            State::Processing { requeue, .. } => {
                let merged = match (*requeue, at) {
                    (Requeue::No, None) => {
                        self.requeue_now += 1;
                        entry.priority = priority;
                        Requeue::Now
                    }
                    (Requeue::No, Some(at)) => {
                        entry.priority = priority;
                        Requeue::At(at)
                    }
                    (Requeue::At(_), None) => {
                        self.requeue_now += 1;
                        entry.priority = entry.priority.max(priority);
                        Requeue::Now
                    }
                    (Requeue::At(old), Some(at)) => {
                        entry.priority = entry.priority.max(priority);
                        Requeue::At(old.min(at))
                    }
                    (Requeue::Now, _) => {
                        entry.priority = entry.priority.max(priority);
                        Requeue::Now
                    }
                };
                *requeue = merged;
                Wake::None
            }
        }
    }

    /// Adds `key` after the delay its rate limiter asks for.
    pub(super) fn add_rate_limited(&mut self, key: T, priority: Priority, clock: &mut Clock) -> Wake {
        self.add_rate_limited_at_most(key, priority, Duration::MAX, clock)
    }

    /// Adds `key` after the delay its rate limiter asks for, or after `cap` if that is shorter.
    pub(super) fn add_rate_limited_at_most(
        &mut self,
        key: T,
        priority: Priority,
        cap: Duration,
        clock: &mut Clock,
    ) -> Wake {
        if self.shutting_down {
            return Wake::None;
        }
        let delay = self.limiter.when(&key, clock.now()).min(cap);
        self.hooks.retry();
        self.add(key, priority, delay, clock)
    }

    pub(super) fn forget(&mut self, key: &T) {
        self.limiter.forget(key);
    }

    pub(super) fn num_requeues(&self, key: &T) -> u32 {
        self.limiter.num_requeues(key)
    }

    fn note_stale_delay(&mut self) {
        if self.delayed.mark_stale() {
            let entries = &self.entries;
            self.delayed.compact(|at, key| {
                matches!(entries.get(key), Some(Entry { state: State::Delayed { at: a }, .. }) if *a == at)
            });
        }
    }

    /// Moves the delayed keys whose time has come to the ready queue.
    fn promote_due(&mut self, clock: &mut Clock) {
        if self.delayed.len() == 0 {
            return;
        }
        let now = clock.now();
        while let Some((at, key)) = self.delayed.pop_due(now) {
            let Some(entry) = self.entries.get_mut(&key) else {
                self.delayed.stale_popped();
                continue;
            };
            match entry.state {
                State::Delayed { at: a } if a == at => {
                    self.seq += 1;
                    let seq = self.seq;
                    entry.state = State::Ready { seq };
                    let priority = entry.priority;
                    self.push_ready(key, priority, seq, at);
                }
                _ => self.delayed.stale_popped(),
            }
        }
    }

    /// Ready keys, after promoting due ones.
    pub(super) fn len(&mut self, clock: &mut Clock) -> usize {
        self.promote_due(clock);
        self.ready.len()
    }

    /// Takes the next ready key and marks it as being processed.
    pub(super) fn pop(&mut self, clock: &mut Clock) -> Pop<T> {
        self.promote_due(clock);
        while let Some(popped) = self.ready.pop(|| clock.now()) {
            let Some(entry) = self.entries.get_mut(&popped.slot.key) else {
                continue;
            };
            match entry.state {
                State::Ready { seq } if seq == popped.slot.seq => {}
                _ => continue,
            }
            let (priority, depth) = self.ready.commit(&popped);
            let now = clock.now();
            entry.state = State::Processing {
                start: self.starts.insert(now),
                requeue: Requeue::No,
            };
            self.processing += 1;
            self.hooks.depth(priority, depth);
            self.hooks
                .queue_duration(priority, now.saturating_duration_since(popped.slot.ready_at));
            return Pop::Key(popped.slot.key);
        }
        if self.shutting_down && self.requeue_now == 0 {
            Pop::Closed
        } else {
            Pop::Empty(self.delayed.next_at())
        }
    }

    /// Marks `key` as processed; requeues it if it was added while being processed.
    pub(super) fn done(&mut self, key: &T, clock: &mut Clock) -> Wake {
        // Remove first: the common case (not added meanwhile) costs one lookup.
        let Some((key, mut entry)) = self.entries.remove_entry(key) else {
            return Wake::None;
        };
        let State::Processing { start, requeue } = entry.state else {
            // Not being processed: a stray `done`. Leave the key as it was.
            self.entries.insert(key, entry);
            return Wake::None;
        };
        self.processing -= 1;
        let now = clock.now();
        if let Some(started) = self.starts.remove(start) {
            self.hooks.work_duration(now.saturating_duration_since(started));
        }
        let wake = match requeue {
            Requeue::No => Wake::None,
            Requeue::Now => {
                self.requeue_now -= 1;
                let seq = self.next_seq();
                entry.state = State::Ready { seq };
                let priority = entry.priority;
                self.entries.insert(key.clone(), entry);
                self.push_ready(key, priority, seq, now);
                Wake::One
            }
            Requeue::At(at) => {
                // Delays were dropped at shutdown, and no new ones were accepted since.
                debug_assert!(!self.shutting_down);
                entry.state = State::Delayed { at };
                self.entries.insert(key.clone(), entry);
                if self.delayed.push(at, key) { Wake::One } else { Wake::None }
            }
        };
        if self.shutting_down && self.ready.len() == 0 && self.requeue_now == 0 {
            Wake::All
        } else {
            wake
        }
    }

    /// Stops accepting keys; drops delayed keys and delayed requeues, keeps ready ones.
    pub(super) fn shutdown(&mut self, clock: &mut Clock) {
        if self.shutting_down {
            return;
        }
        self.promote_due(clock);
        self.shutting_down = true;
        let _ = self.delayed.drain().count();
        self.entries.retain(|_, entry| match &mut entry.state {
            State::Ready { .. } => true,
            State::Delayed { .. } => false,
            State::Processing { requeue, .. } => {
                if matches!(requeue, Requeue::At(_)) {
                    *requeue = Requeue::No;
                }
                true
            }
        });
    }

    pub(super) fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// Shut down, nothing ready and nothing being processed.
    pub(super) fn is_drained(&self) -> bool {
        self.shutting_down && self.ready.len() == 0 && self.processing == 0
    }

    pub(super) fn processing(&self) -> usize {
        self.processing
    }

    /// Keys waiting for a delay (their own, or a rate limiter's), not counting keys being
    /// processed that will be delayed when done.
    pub(super) fn delayed(&self) -> usize {
        self.entries.len() - self.ready.len() - self.processing
    }

    /// Reports unfinished work and the longest running processor to the hooks.
    pub(super) fn update_unfinished_work(&self, clock: &mut Clock) {
        let now = clock.now();
        let mut total = Duration::ZERO;
        let mut longest = Duration::ZERO;
        for started in self.starts.slots.iter().flatten() {
            let d = now.saturating_duration_since(*started);
            total += d;
            longest = longest.max(d);
        }
        self.hooks.unfinished_work(total);
        self.hooks.longest_running_processor(longest);
    }
}
