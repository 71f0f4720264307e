//! The recently read objects a compact store keeps decoded.

use std::sync::Arc;

use super::ObjectKey;
use super::key::KeyMap;

/// A bounded set of decoded objects in two generations: reads land in the young one; when it is
/// full, it becomes the old one and the previous old one is dropped; a read found in the old one
/// moves it back to the young one. So an object read at least once every `capacity / 2` reads
/// stays decoded, with O(1) work per read and no list to maintain.
pub(super) struct Hot<K> {
    generation: usize,
    young: KeyMap<Arc<K>>,
    old: KeyMap<Arc<K>>,
}

impl<K> Hot<K> {
    /// Holds at most `capacity` objects, rounded up to an even number; 0 keeps none.
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            generation: capacity.div_ceil(2),
            young: KeyMap::default(),
            old: KeyMap::default(),
        }
    }

    /// The decoded object, if it is hot; it then counts as just read.
    pub(super) fn get(&mut self, key: &ObjectKey) -> Option<Arc<K>> {
        if let Some(obj) = self.young.get(key) {
            return Some(Arc::clone(obj));
        }
        let obj = self.old.remove(key)?;
        self.insert(key.clone(), Arc::clone(&obj));
        Some(obj)
    }

    /// The decoded object, if it is hot, without counting as a read (for listings).
    pub(super) fn peek(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.young.get(key).or_else(|| self.old.get(key)).cloned()
    }

    /// Keeps a just-decoded object.
    pub(super) fn insert(&mut self, key: ObjectKey, obj: Arc<K>) {
        if self.generation == 0 {
            return;
        }
        if self.young.len() >= self.generation {
            self.old = std::mem::take(&mut self.young);
        }
        self.old.remove(&key);
        self.young.insert(key, obj);
    }

    /// Replaces a hot object with its new state (a cold one stays cold).
    pub(super) fn refresh(&mut self, key: &ObjectKey, obj: &Arc<K>) {
        if let Some(hot) = self.young.get_mut(key).or_else(|| self.old.get_mut(key)) {
            *hot = Arc::clone(obj);
        }
    }

    /// Forgets a deleted object.
    pub(super) fn remove(&mut self, key: &ObjectKey) {
        self.young.remove(key);
        self.old.remove(key);
    }

    /// How many objects are hot.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: usize) -> ObjectKey {
        ObjectKey::new(Some("ns"), &format!("o{i}"))
    }

    #[test]
    fn the_hot_set_never_holds_more_than_its_capacity() {
        let mut hot = Hot::new(10);
        for i in 0..100 {
            hot.insert(key(i), Arc::new(i));
            assert!(hot.len() <= 10, "{} hot after {} inserts", hot.len(), i + 1);
        }
        assert!(hot.get(&key(99)).is_some(), "the latest read is hot");
        assert!(hot.get(&key(0)).is_none(), "the first read was evicted");
        let mut none = Hot::new(0);
        none.insert(key(1), Arc::new(1));
        assert_eq!(none.len(), 0);
    }

    #[test]
    fn an_object_read_again_before_eviction_stays_hot() {
        let mut hot = Hot::new(4);
        hot.insert(key(0), Arc::new(0));
        for i in 1..50 {
            assert!(hot.get(&key(0)).is_some(), "key 0 evicted at insert {i}");
            hot.insert(key(i), Arc::new(i));
        }
    }

    #[test]
    fn a_refresh_replaces_only_hot_objects_and_remove_forgets_them() {
        let mut hot = Hot::new(4);
        hot.insert(key(1), Arc::new(1));
        hot.refresh(&key(1), &Arc::new(10));
        hot.refresh(&key(2), &Arc::new(20));
        assert_eq!(hot.peek(&key(1)).as_deref(), Some(&10));
        assert!(hot.peek(&key(2)).is_none());
        hot.remove(&key(1));
        assert!(hot.get(&key(1)).is_none());
    }
}
