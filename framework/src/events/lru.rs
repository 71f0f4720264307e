//! Holds at most a fixed number of entries, forgetting the least recently used first.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// A map of at most `capacity` entries; inserting past it evicts the entry used longest ago.
#[derive(Debug)]
pub(crate) struct Lru<K, V> {
    capacity: usize,
    /// Every entry with the tick of its last use.
    entries: HashMap<K, (u64, V)>,
    /// The keys by the tick of their last use, oldest first.
    order: BTreeMap<u64, K>,
    tick: u64,
}

impl<K: Clone + Eq + Hash, V> Lru<K, V> {
    /// An empty map that holds at most `capacity` entries (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            entries: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
        }
    }

    /// The value of `key`, now the most recently used.
    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let (tick, value) = self.entries.get_mut(key)?;
        self.tick += 1;
        let key = self
            .order
            .remove(tick)
            .expect("lru invariant: every entry's tick is in the order");
        self.order.insert(self.tick, key);
        *tick = self.tick;
        Some(value)
    }

    /// Sets `key` to `value` as the most recently used, evicting the oldest entry when full.
    pub(crate) fn insert(&mut self, key: K, value: V) {
        self.remove(&key);
        if self.entries.len() >= self.capacity
            && let Some((_, oldest)) = self.order.pop_first()
        {
            self.entries.remove(&oldest);
        }
        self.tick += 1;
        self.order.insert(self.tick, key.clone());
        self.entries.insert(key, (self.tick, value));
    }

    /// Forgets `key`.
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        let (tick, value) = self.entries.remove(key)?;
        self.order.remove(&tick);
        Some(value)
    }

    /// How many entries it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserting_past_capacity_evicts_the_least_recently_used() {
        let mut lru = Lru::new(2);
        lru.insert("a", 1);
        lru.insert("b", 2);
        assert_eq!(lru.get_mut(&"a"), Some(&mut 1));
        lru.insert("c", 3);
        assert_eq!(lru.len(), 2);
        assert!(lru.get_mut(&"b").is_none(), "b was used longest ago");
        assert!(lru.get_mut(&"a").is_some() && lru.get_mut(&"c").is_some());
    }

    #[test]
    fn replacing_a_key_does_not_grow_the_map() {
        let mut lru = Lru::new(2);
        lru.insert("a", 1);
        lru.insert("a", 2);
        lru.insert("b", 3);
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.remove(&"a"), Some(2));
        assert_eq!(lru.len(), 1);
    }
}
