//! Delayed keys: a binary heap ordered by ready time, read lazily.
//!
//! Nothing runs in the background: whoever takes the queue's lock and needs an up-to-date view
//! (`get`, `len`, `shutdown`) moves the keys whose time has come to the ready queue first, and a
//! worker with nothing to do sleeps until the heap's earliest time. When a key's delay is
//! shortened, a new entry is pushed and the old one is left to be recognised as stale (its time no
//! longer matches the key's state) when it surfaces, or by [`DelayHeap::compact`] if stale entries
//! pile up.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use tokio::time::Instant;

#[derive(Debug)]
struct Delayed<T> {
    at: Instant,
    seq: u64,
    key: T,
}

impl<T> PartialEq for Delayed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}

impl<T> Eq for Delayed<T> {}

impl<T> PartialOrd for Delayed<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Delayed<T> {
    /// Reversed: `BinaryHeap` is a max-heap and we want the earliest time (then the earliest
    /// push) on top.
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.cmp(&self.at).then(other.seq.cmp(&self.seq))
    }
}

/// Keys waiting for their time, earliest first.
#[derive(Debug)]
pub(super) struct DelayHeap<T> {
    heap: BinaryHeap<Delayed<T>>,
    seq: u64,
    /// Entries known to be stale (superseded by an earlier time or by the key becoming ready).
    stale: usize,
}

impl<T> DelayHeap<T> {
    pub(super) fn new() -> Self {
        DelayHeap {
            heap: BinaryHeap::new(),
            seq: 0,
            stale: 0,
        }
    }

    /// Entries, stale ones included.
    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Adds `key` at `at`; returns whether `at` is now the earliest time (so that a sleeping
    /// worker must recompute its deadline).
    pub(super) fn push(&mut self, at: Instant, key: T) -> bool {
        let earliest = self.heap.peek().is_none_or(|top| at < top.at);
        self.seq += 1;
        self.heap.push(Delayed {
            at,
            seq: self.seq,
            key,
        });
        earliest
    }

    /// The earliest time in the heap (possibly of a stale entry: waking early is harmless).
    pub(super) fn next_at(&self) -> Option<Instant> {
        self.heap.peek().map(|d| d.at)
    }

    /// Takes the earliest entry if its time is `<= now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<(Instant, T)> {
        if self.heap.peek()?.at > now {
            return None;
        }
        self.heap.pop().map(|d| (d.at, d.key))
    }

    /// Notes that one entry became stale; returns true when stale entries are worth dropping.
    pub(super) fn mark_stale(&mut self) -> bool {
        self.stale += 1;
        self.stale > 64 && self.stale > self.heap.len() / 2
    }

    /// A stale entry surfaced and was dropped.
    pub(super) fn stale_popped(&mut self) {
        self.stale = self.stale.saturating_sub(1);
    }

    /// Keeps only the entries for which `valid(at, key)` holds.
    pub(super) fn compact(&mut self, mut valid: impl FnMut(Instant, &T) -> bool) {
        self.heap.retain(|d| valid(d.at, &d.key));
        self.stale = 0;
    }

    /// Drops everything, returning the keys.
    pub(super) fn drain(&mut self) -> impl Iterator<Item = (Instant, T)> + '_ {
        self.stale = 0;
        self.heap.drain().map(|d| (d.at, d.key))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn earliest_first_then_push_order() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut h = DelayHeap::new();
        assert!(h.push(t0 + 3 * s, "c"));
        assert!(h.push(t0 + s, "a"));
        assert!(!h.push(t0 + s, "b"));
        assert!(!h.push(t0 + 2 * s, "x"));
        assert_eq!(h.next_at(), Some(t0 + s));
        assert_eq!(h.pop_due(t0), None);
        let due: Vec<_> = std::iter::from_fn(|| h.pop_due(t0 + 2 * s))
            .map(|(_, k)| k)
            .collect();
        assert_eq!(due, vec!["a", "b", "x"]);
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn compaction_threshold() {
        let t0 = Instant::now();
        let mut h = DelayHeap::new();
        for i in 0..100 {
            h.push(t0, i);
        }
        assert!((0..50).all(|_| !h.mark_stale()));
        assert!((50..65).any(|_| h.mark_stale()));
        h.compact(|_, k| k % 2 == 0);
        assert_eq!(h.len(), 50);
    }
}
