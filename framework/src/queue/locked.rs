//! The queue's state, behind its one lock: a map from key to state, the ready queue and the delay
//! heap. Everything here is synchronous; [`super::WorkQueue`] adds the lock and the waking.
//! Nothing here frees a key: keys it lets go of are handed back, to be dropped after unlocking.
//!
//! A key is in exactly one of these states (absent keys have no entry):
//!
//! | state | in the ready queue | in the delay heap | `get` can return it |
//! | --- | --- | --- | --- |
//! | `Ready` | one valid slot | maybe stale entries | yes |
//! | `Delayed { at }` | maybe stale slots | an entry at `at` | once `at` has passed |
//! | `Processing { requeue }` | maybe stale slots | maybe stale entries | no; `done` requeues it if it was added meanwhile |

use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use hashbrown::{DefaultHashBuilder, HashTable};
use tokio::time::Instant;

use super::delay::DelayHeap;
use super::done::Done;
use super::hooks::QueueHooks;
use super::priority::{Priority, ReadyQueue};
use super::rate_limiter::RateLimiter;
use crate::spare_capacity;

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
    Ready {
        seq: u64,
    },
    Delayed {
        at: Instant,
    },
    /// `start` indexes `Locked::starts`, or is [`NOT_TIMED`].
    Processing {
        start: u32,
        requeue: Requeue,
    },
}

/// `State::Processing::start` when the hooks want no durations.
const NOT_TIMED: u32 = u32::MAX;

#[derive(Debug)]
struct Entry {
    /// The key's hash, so that the table grows and shrinks without hashing keys again.
    hash: u64,
    state: State,
    /// The priority it waits at (the highest it was added with since it last started
    /// processing).
    priority: Priority,
}

/// A key with its hash from the queue's hasher, as the ready queue and the delay heap hold it:
/// a key is hashed once, before the lock is taken, and never again while it is queued.
#[derive(Debug)]
struct Hashed<T> {
    key: T,
    hash: u64,
}

/// Merges an add (ready at `at`, `None` for now) into the requeue of a key being processed;
/// returns whether the requeue became `Now`.
fn merge_requeue(
    requeue: &mut Requeue,
    current: &mut Priority,
    at: Option<Instant>,
    priority: Priority,
) -> bool {
    // The first add since processing started sets the priority; later ones can only raise it.
    *current = if *requeue == Requeue::No {
        priority
    } else {
        (*current).max(priority)
    };
    let merged = match (*requeue, at) {
        (Requeue::No | Requeue::At(_), None) | (Requeue::Now, _) => Requeue::Now,
        (Requeue::No, Some(at)) => Requeue::At(at),
        (Requeue::At(old), Some(at)) => Requeue::At(old.min(at)),
    };
    let became_now = merged == Requeue::Now && *requeue != Requeue::Now;
    *requeue = merged;
    became_now
}

/// The outcome of [`Locked::pop`].
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
    /// Keeps `at`; returns its index, or [`NOT_TIMED`] when 2^32 - 1 keys are being timed
    /// already (that one key then goes without a work duration).
    fn insert(&mut self, at: Instant) -> u32 {
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = Some(at);
            return i;
        }
        match u32::try_from(self.slots.len()) {
            Ok(i) if i != NOT_TIMED => {
                self.slots.push(Some(at));
                i
            }
            _ => NOT_TIMED,
        }
    }

    fn remove(&mut self, i: u32) -> Option<Instant> {
        let at = self.slots.get_mut(i as usize)?.take();
        self.free.push(i);
        at
    }

    fn iter(&self) -> impl Iterator<Item = &Instant> {
        self.slots.iter().flatten()
    }
}

pub(super) struct Locked<T> {
    /// Every known key and its state: one hash per operation, foldhash (seeded per queue).
    entries: HashTable<(T, Entry)>,
    hasher: DefaultHashBuilder,
    /// Whether the hooks want durations (so the clock is read on `get` and `done`).
    timed: bool,
    ready: ReadyQueue<Hashed<T>>,
    delayed: DelayHeap<Hashed<T>>,
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

impl<T> std::fmt::Debug for Locked<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Locked")
            .field("ready", &self.ready.len())
            .field("processing", &self.processing)
            .field("keys", &self.entries.len())
            .field("shutting_down", &self.shutting_down)
            .finish_non_exhaustive()
    }
}

impl<T: Hash + Eq + Clone> Locked<T> {
    pub(super) fn new(
        limiter: Box<dyn RateLimiter<T>>,
        hooks: Arc<dyn QueueHooks>,
        aging: Option<Duration>,
    ) -> Self {
        let timed = hooks.wants_durations();
        Locked {
            entries: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            timed,
            ready: ReadyQueue::new(aging, timed, Instant::now()),
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

    /// The hasher, so that callers can hash keys before taking the lock.
    pub(super) fn hasher(&self) -> DefaultHashBuilder {
        self.hasher.clone()
    }

    /// Queues `key` as ready; the caller has set its state to `Ready { seq }`. `ready_at`:
    /// when it became ready, if not now.
    fn push_ready(
        &mut self,
        key: Hashed<T>,
        priority: Priority,
        seq: u64,
        ready_at: Option<Instant>,
        clock: &mut Clock,
    ) {
        let depth = self
            .ready
            .push(priority, key, seq, ready_at, &mut || clock.now());
        self.hooks.add(priority);
        self.hooks.depth(priority, depth);
    }

    /// Adds `key` (whose hash from [`Self::hasher`] is `hash`) at `priority`, ready after
    /// `delay`. Gives `key` back if it was merged, so that the caller can drop it after
    /// unlocking.
    pub(super) fn add(
        &mut self,
        key: T,
        hash: u64,
        priority: Priority,
        delay: Duration,
        clock: &mut Clock,
    ) -> (Wake, Option<T>) {
        if self.shutting_down {
            return (Wake::None, Some(key));
        }
        let at = (!delay.is_zero()).then(|| clock.now() + delay.min(MAX_DELAY));
        let Some((_, entry)) = self.entries.find_mut(hash, |(k, _)| *k == key) else {
            // A new key: one clone, for the ready slot or the heap entry.
            let queued = Hashed {
                key: key.clone(),
                hash,
            };
            let state = match at {
                None => State::Ready {
                    seq: self.next_seq(),
                },
                Some(at) => State::Delayed { at },
            };
            let entry = Entry {
                hash,
                state,
                priority,
            };
            self.entries
                .insert_unique(hash, (key, entry), |(_, entry)| entry.hash);
            let wake = match at {
                None => {
                    let seq = self.seq;
                    self.push_ready(queued, priority, seq, None, clock);
                    Wake::One
                }
                Some(at) => {
                    if self.delayed.push(at, queued) {
                        Wake::One
                    } else {
                        Wake::None
                    }
                }
            };
            return (wake, None);
        };
        // A known key: merge. The owned `key` is only moved into a new slot or heap entry, and
        // otherwise given back.
        match &mut entry.state {
            State::Ready { seq } => {
                if priority <= entry.priority {
                    return (Wake::None, Some(key));
                }
                // Move to the higher level; the old slot goes stale.
                let old = entry.priority;
                entry.priority = priority;
                self.seq += 1;
                *seq = self.seq;
                let seq = self.seq;
                let depth = self.ready.invalidate(old);
                self.hooks.depth(old, depth);
                let depth = self
                    .ready
                    .push(priority, Hashed { key, hash }, seq, None, &mut || {
                        clock.now()
                    });
                self.hooks.depth(priority, depth);
                (Wake::None, None)
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
                        self.push_ready(Hashed { key, hash }, priority, seq, None, clock);
                        (Wake::One, None)
                    }
                    Some(at) if at < *old_at => {
                        *old_at = at;
                        self.note_stale_delay();
                        let wake = if self.delayed.push(at, Hashed { key, hash }) {
                            Wake::One
                        } else {
                            Wake::None
                        };
                        (wake, None)
                    }
                    Some(_) => (Wake::None, Some(key)),
                }
            }
            State::Processing { requeue, .. } => {
                if merge_requeue(requeue, &mut entry.priority, at, priority) {
                    self.requeue_now += 1;
                }
                (Wake::None, Some(key))
            }
        }
    }

    /// Adds `key` after the delay its rate limiter asks for.
    pub(super) fn add_rate_limited(
        &mut self,
        key: T,
        hash: u64,
        priority: Priority,
        clock: &mut Clock,
    ) -> (Wake, Option<T>) {
        self.add_rate_limited_at_most(key, hash, priority, Duration::MAX, clock)
    }

    /// Adds `key` after the delay its rate limiter asks for, or after `cap` if that is shorter.
    pub(super) fn add_rate_limited_at_most(
        &mut self,
        key: T,
        hash: u64,
        priority: Priority,
        cap: Duration,
        clock: &mut Clock,
    ) -> (Wake, Option<T>) {
        if self.shutting_down {
            return (Wake::None, Some(key));
        }
        let delay = self.limiter.when(&key, clock.now()).min(cap);
        self.hooks.retry();
        self.add(key, hash, priority, delay, clock)
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
            self.delayed.compact(|at, queued| {
                let found = entries.find(queued.hash, |(k, _)| *k == queued.key);
                matches!(found, Some((_, Entry { state: State::Delayed { at: a }, .. })) if *a == at)
            });
        }
    }

    /// Moves the delayed keys whose time has come to the ready queue.
    fn promote_due(&mut self, clock: &mut Clock) {
        if self.delayed.len() == 0 {
            return;
        }
        let now = clock.now();
        while let Some((at, queued)) = self.delayed.pop_due(now) {
            match self
                .entries
                .find_mut(queued.hash, |(k, _)| *k == queued.key)
            {
                Some((_, entry)) if matches!(entry.state, State::Delayed { at: a } if a == at) => {
                    self.seq += 1;
                    let seq = self.seq;
                    entry.state = State::Ready { seq };
                    let priority = entry.priority;
                    self.push_ready(queued, priority, seq, Some(at), clock);
                }
                _ => self.delayed.stale_popped(),
            }
        }
    }

    /// Whether to notify a sleeper about a key that became ready (or an earlier delay), and if
    /// so counts the wake-up as on its way: only if a worker sleeps and no wake-up is on its way
    /// already. One at a time is enough: the woken worker passes it on if it leaves keys ready
    /// (`WorkQueue::get`), and waking one per add would have a burst of adds wake every worker to
    /// contend for the lock.
    pub(super) fn wake_one(&mut self) -> bool {
        let wake = self.woken == 0 && self.sleepers > 0;
        if wake {
            self.woken = 1;
        }
        wake
    }

    /// [`Self::pop`] for a worker's `get`; also says whether to pass a wake-up on to the next
    /// sleeper, because it leaves keys ready that no wake-up is on its way for.
    pub(super) fn take(&mut self) -> (Pop<T>, bool) {
        let popped = self.pop(&mut Clock::default());
        let pass_on = matches!(popped, Pop::Key(_)) && self.ready.len() > 0 && self.wake_one();
        (popped, pass_on)
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
            let queued = &popped.slot.key;
            let Some((_, entry)) = self
                .entries
                .find_mut(queued.hash, |(k, _)| *k == queued.key)
            else {
                continue;
            };
            if !matches!(entry.state, State::Ready { seq } if seq == popped.slot.seq) {
                continue;
            }
            let (priority, depth) = self.ready.commit(&popped);
            let start = if self.timed {
                let now = clock.now();
                self.hooks.queue_duration(
                    priority,
                    now.saturating_duration_since(popped.slot.ready_at),
                );
                self.starts.insert(now)
            } else {
                NOT_TIMED
            };
            entry.state = State::Processing {
                start,
                requeue: Requeue::No,
            };
            self.processing += 1;
            self.hooks.depth(priority, depth);
            return Pop::Key(popped.slot.key.key);
        }
        if self.shutting_down && self.requeue_now == 0 {
            Pop::Closed
        } else {
            Pop::Empty(self.delayed.next_at())
        }
    }

    /// Room in the key table (for tests of `release_spare`).
    #[cfg(test)]
    pub(super) fn key_capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// Gives back the memory a drained burst left behind: a queue that held 10,000 keys once
    /// would otherwise keep room for them.
    fn release_spare(&mut self) {
        if spare_capacity::oversized(self.entries.capacity()) {
            self.entries
                .shrink_to(spare_capacity::KEPT, |(_, entry)| entry.hash);
        }
        self.ready.release_spare();
    }

    /// Marks `key` (with `hash`) as processed; requeues it if it was added while being
    /// processed. Says what became of it, and gives the map's copy of the key back when it is
    /// removed, so that the caller can drop it after unlocking.
    pub(super) fn done(
        &mut self,
        key: &T,
        hash: u64,
        clock: &mut Clock,
    ) -> (Wake, Done, Option<T>) {
        let Ok(mut found) = self.entries.find_entry(hash, |(k, _)| k == key) else {
            return (Wake::None, Done::NotProcessing, None);
        };
        let (_, entry) = found.get_mut();
        let State::Processing { start, requeue } = entry.state else {
            // Not being processed: a stray `done`. Leave the key as it was.
            return (Wake::None, Done::NotProcessing, None);
        };
        self.processing -= 1;
        if start != NOT_TIMED
            && let Some(started) = self.starts.remove(start)
        {
            self.hooks
                .work_duration(clock.now().saturating_duration_since(started));
        }
        let mut removed = None;
        let (wake, next) = match requeue {
            Requeue::No => {
                removed = Some(found.remove().0.0);
                if self.entries.is_empty() {
                    self.release_spare();
                }
                (Wake::None, Done::Removed)
            }
            Requeue::Now => {
                self.requeue_now -= 1;
                self.seq += 1;
                let seq = self.seq;
                entry.state = State::Ready { seq };
                let priority = entry.priority;
                let key = found.get().0.clone();
                self.push_ready(Hashed { key, hash }, priority, seq, None, clock);
                (Wake::One, Done::Ready)
            }
            Requeue::At(at) => {
                // Delays were dropped at shutdown, and no new ones were accepted since.
                debug_assert!(!self.shutting_down);
                entry.state = State::Delayed { at };
                let key = found.get().0.clone();
                let wake = if self.delayed.push(at, Hashed { key, hash }) {
                    Wake::One
                } else {
                    Wake::None
                };
                (wake, Done::Delayed)
            }
        };
        if self.shutting_down && self.ready.len() == 0 && self.requeue_now == 0 {
            (Wake::All, next, removed)
        } else {
            (wake, next, removed)
        }
    }

    /// Stops accepting keys; drops delayed keys and delayed requeues, keeps ready ones.
    pub(super) fn shutdown(&mut self, clock: &mut Clock) {
        if self.shutting_down {
            return;
        }
        self.promote_due(clock);
        let now = clock.now();
        self.shutting_down = true;
        let _ = self.delayed.drain().count();
        let mut requeue_now = 0;
        self.entries.retain(|(_, entry)| match &mut entry.state {
            State::Ready { .. } => true,
            State::Delayed { .. } => false,
            State::Processing { requeue, .. } => {
                // A requeue whose time has come counts as ready; a later one is dropped.
                match *requeue {
                    Requeue::At(at) if at <= now => *requeue = Requeue::Now,
                    Requeue::At(_) => *requeue = Requeue::No,
                    Requeue::No | Requeue::Now => {}
                }
                if *requeue == Requeue::Now {
                    requeue_now += 1;
                }
                true
            }
        });
        self.requeue_now = requeue_now;
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
        for started in self.starts.iter() {
            let d = now.saturating_duration_since(*started);
            total += d;
            longest = longest.max(d);
        }
        self.hooks.unfinished_work(total);
        self.hooks.longest_running_processor(longest);
    }
}
