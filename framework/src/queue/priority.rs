//! Priorities and the ready queue: FIFO per priority, highest priority first, with aging.
//!
//! Ready keys live in one FIFO per priority level (levels are few: in practice
//! [`Priority::NORMAL`] and [`Priority::LOW`]). [`ReadyQueue::pop`] normally hands out the front of
//! the highest non-empty level. With aging on, a key that has been ready for at least the aging
//! limit is *overdue*; while there is an overdue key that the normal rule would not pick, every
//! other pop hands out the key that has been ready longest instead (the oldest front over all
//! levels). See [`crate::queue`] for the bound this gives.
//!
//! Slots are never removed from the middle of a FIFO: when a waiting key moves to a higher level,
//! its old slot is left behind and recognised as stale by its sequence number when it reaches the
//! front. The queue owner checks validity (it holds the key → state map) and calls
//! [`ReadyQueue::commit`] for a valid slot.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use crate::spare_capacity;

/// How urgent a key is: higher values are handed out first.
///
/// Only the order matters. controller-runtime's values are kept: live changes are added at
/// [`Priority::NORMAL`] (the default) and events from the initial list and resyncs at
/// [`Priority::LOW`]. A key waiting in the queue keeps the highest priority it was added with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(pub i32);

impl Priority {
    /// The default priority: live changes, requeues and retries.
    pub const NORMAL: Priority = Priority(0);
    /// Events from the initial list and from resyncs (controller-runtime's `LowPriority`).
    pub const LOW: Priority = Priority(-100);
}

impl From<i32> for Priority {
    fn from(value: i32) -> Self {
        Priority(value)
    }
}

/// A key waiting in a level's FIFO.
#[derive(Debug)]
pub(super) struct Slot<T> {
    pub(super) key: T,
    /// Matches the key's state while the slot is valid.
    pub(super) seq: u64,
    /// When the key became ready (monotone within a level).
    pub(super) ready_at: Instant,
}

#[derive(Debug)]
struct Level<T> {
    priority: Priority,
    slots: VecDeque<Slot<T>>,
    /// Valid slots in `slots`.
    depth: usize,
}

/// A slot taken by [`ReadyQueue::pop`]: the caller checks it and calls [`ReadyQueue::commit`] if
/// it is valid.
#[derive(Debug)]
pub(super) struct Popped<T> {
    pub(super) slot: Slot<T>,
    level: usize,
    aged: bool,
}

/// The ready keys, by priority.
#[derive(Debug)]
pub(super) struct ReadyQueue<T> {
    /// Sorted by priority, highest first. Levels are created on first use and never removed.
    levels: Vec<Level<T>>,
    /// Valid slots over all levels.
    len: usize,
    /// Ready this long and a key is overdue; `None` is strict priority.
    aging: Option<Duration>,
    /// Whether the last handed-out key was an overdue key taken out of priority order.
    last_aged: bool,
    /// Whether ready times are read from the clock. Only aging (with two or more levels) and
    /// duration hooks need them, and reading the clock is a large part of a cheap operation, so
    /// a queue that uses one priority and no duration hooks never reads it here.
    stamping: bool,
    /// The ready time of slots pushed while not stamping.
    unstamped: Instant,
}

impl<T> ReadyQueue<T> {
    /// `stamping`: read ready times from the start; `unstamped`: the time to use until then.
    pub(super) fn new(aging: Option<Duration>, stamping: bool, unstamped: Instant) -> Self {
        ReadyQueue {
            levels: Vec::new(),
            len: 0,
            aging,
            last_aged: false,
            stamping,
            unstamped,
        }
    }

    /// Valid (ready) keys.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Drops the stale slots of levels with no valid key left whose room a burst grew, and
    /// shrinks them (see [`spare_capacity`]).
    pub(super) fn release_spare(&mut self) {
        for level in &mut self.levels {
            if level.depth == 0 && spare_capacity::oversized(level.slots.capacity()) {
                level.slots.clear();
                level.slots.shrink_to(spare_capacity::KEPT);
            }
        }
    }

    fn level_index(&mut self, priority: Priority, now: &mut dyn FnMut() -> Instant) -> usize {
        // Few levels: a linear scan beats anything clever. The first one is the common case.
        match self.levels.iter().position(|l| l.priority <= priority) {
            Some(i) if self.levels[i].priority == priority => i,
            found => {
                if !self.stamping && !self.levels.is_empty() && self.aging.is_some() {
                    // A second level: aging compares ready times from now on. The keys already
                    // waiting count as ready since now (they were never compared before).
                    self.stamping = true;
                    let now = now();
                    for slot in self.levels.iter_mut().flat_map(|l| l.slots.iter_mut()) {
                        slot.ready_at = now;
                    }
                }
                let i = found.unwrap_or(self.levels.len());
                self.levels.insert(
                    i,
                    Level {
                        priority,
                        slots: VecDeque::new(),
                        depth: 0,
                    },
                );
                i
            }
        }
    }

    /// Appends a valid slot; returns the level's new depth. `ready_at` (`None`: now) is raised to
    /// the level's last one so that every FIFO stays ordered by readiness.
    pub(super) fn push(
        &mut self,
        priority: Priority,
        key: T,
        seq: u64,
        ready_at: Option<Instant>,
        now: &mut dyn FnMut() -> Instant,
    ) -> usize {
        let i = self.level_index(priority, now);
        let ready_at = match ready_at {
            Some(at) => at,
            None if self.stamping => now(),
            None => self.unstamped,
        };
        let level = &mut self.levels[i];
        let ready_at = level
            .slots
            .back()
            .map_or(ready_at, |b| b.ready_at.max(ready_at));
        level.slots.push_back(Slot { key, seq, ready_at });
        level.depth += 1;
        self.len += 1;
        level.depth
    }

    /// A valid slot at `priority` became stale (its key moved or was dropped); returns the level's
    /// new depth.
    pub(super) fn invalidate(&mut self, priority: Priority) -> usize {
        // Cannot fire: the caller passes the priority its key's valid slot was pushed at, `push`
        // created that level, and levels are never removed.
        let i = self
            .levels
            .iter()
            .position(|l| l.priority == priority)
            .expect("a valid slot's level exists");
        let level = &mut self.levels[i];
        level.depth -= 1;
        self.len -= 1;
        if self.len == 0 {
            self.clear_stale();
        }
        self.levels[i].depth
    }

    fn clear_stale(&mut self) {
        for level in &mut self.levels {
            level.slots.clear();
        }
    }

    /// Takes the next slot to hand out, which may be stale. `None` when no key is ready.
    /// `now` is only called when two or more levels hold keys and aging is on.
    pub(super) fn pop(&mut self, now: impl FnOnce() -> Instant) -> Option<Popped<T>> {
        if self.len == 0 {
            return None;
        }
        let first = self.levels.iter().position(|l| !l.slots.is_empty())?;
        let mut chosen = first;
        let mut aged = false;
        if let Some(limit) = self.aging
            && !self.last_aged
        {
            let mut oldest = first;
            let mut oldest_at = self.levels[first].slots[0].ready_at;
            for (i, level) in self.levels.iter().enumerate().skip(first + 1) {
                if let Some(front) = level.slots.front()
                    && front.ready_at < oldest_at
                {
                    oldest = i;
                    oldest_at = front.ready_at;
                }
            }
            if oldest != first && now().saturating_duration_since(oldest_at) >= limit {
                chosen = oldest;
                aged = true;
            }
        }
        let slot = self.levels[chosen].slots.pop_front()?;
        Some(Popped {
            slot,
            level: chosen,
            aged,
        })
    }

    /// Records that a popped slot was valid and is handed out; returns its priority and the
    /// level's new depth.
    pub(super) fn commit(&mut self, popped: &Popped<T>) -> (Priority, usize) {
        let level = &mut self.levels[popped.level];
        level.depth -= 1;
        self.len -= 1;
        self.last_aged = popped.aged;
        let out = (level.priority, level.depth);
        if self.len == 0 {
            self.clear_stale();
        }
        out
    }

    /// Each level's priority and depth.
    #[cfg(test)]
    pub(super) fn levels(&self) -> Vec<(Priority, usize)> {
        self.levels.iter().map(|l| (l.priority, l.depth)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(q: &mut ReadyQueue<u32>, now: Instant) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(p) = q.pop(|| now) {
            q.commit(&p);
            out.push(p.slot.key);
        }
        out
    }

    #[test]
    fn highest_priority_first_fifo_within() {
        let t0 = Instant::now();
        let mut q = ReadyQueue::new(None, false, t0);
        q.push(Priority::LOW, 1, 0, Some(t0), &mut || t0);
        q.push(Priority::NORMAL, 2, 0, Some(t0), &mut || t0);
        q.push(Priority(5), 3, 0, Some(t0), &mut || t0);
        q.push(Priority::NORMAL, 4, 0, Some(t0), &mut || t0);
        q.push(Priority::LOW, 5, 0, Some(t0), &mut || t0);
        assert_eq!(
            q.levels(),
            vec![(Priority(5), 1), (Priority::NORMAL, 2), (Priority::LOW, 2)]
        );
        assert_eq!(drain(&mut q, t0), vec![3, 2, 4, 1, 5]);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn overdue_keys_take_every_other_turn() {
        let t0 = Instant::now();
        let mut q = ReadyQueue::new(Some(Duration::from_secs(10)), false, t0);
        q.push(Priority::LOW, 100, 0, Some(t0), &mut || t0);
        q.push(Priority::LOW, 101, 0, Some(t0), &mut || t0);
        for k in 0..4 {
            q.push(
                Priority::NORMAL,
                k,
                0,
                Some(t0 + Duration::from_secs(1)),
                &mut || t0,
            );
        }
        // Not overdue yet: strict priority.
        let p = q.pop(|| t0 + Duration::from_secs(5)).unwrap();
        q.commit(&p);
        assert_eq!(p.slot.key, 0);
        // Overdue: the oldest key, then a normal one, alternating.
        let later = t0 + Duration::from_secs(10);
        assert_eq!(drain(&mut q, later), vec![100, 1, 101, 2, 3]);
    }

    #[test]
    fn ready_at_is_monotone_within_a_level() {
        let t0 = Instant::now();
        let mut q = ReadyQueue::new(Some(Duration::from_secs(1)), false, t0);
        q.push(
            Priority::LOW,
            1,
            0,
            Some(t0 + Duration::from_secs(5)),
            &mut || t0,
        );
        q.push(Priority::LOW, 2, 0, Some(t0), &mut || t0);
        let a = q.pop(|| t0).unwrap();
        let b = q.pop(|| t0).unwrap();
        assert!(b.slot.ready_at >= a.slot.ready_at);
    }
}
