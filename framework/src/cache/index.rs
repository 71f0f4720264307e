//! Named index functions and the index they maintain.

use std::sync::Arc;

use hashbrown::HashMap;

use super::ObjectKey;
use super::key::KeySet;

/// Computes the index values of an object, e.g. its node name; an object may have several or none.
#[doc(alias = "IndexFunc")]
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// The name of the built-in index of objects by namespace (cluster-scoped objects are not in it).
#[doc(alias = "NamespaceIndex")]
pub const NAMESPACE_INDEX: &str = "namespace";

/// One named index: value → keys of the objects that have it (values hashed with foldhash, keys
/// by the hash they keep).
pub(super) struct Index<K> {
    pub(super) function: IndexFn<K>,
    pub(super) entries: HashMap<String, KeySet>,
}

impl<K> Index<K> {
    pub(super) fn new(function: IndexFn<K>) -> Self {
        Self {
            function,
            entries: HashMap::new(),
        }
    }

    /// Moves `key` from the values of `old` to those of `new`.
    pub(super) fn update(&mut self, key: &ObjectKey, old: Option<&K>, new: Option<&K>) {
        let old_values = old.map(|o| (self.function)(o)).unwrap_or_default();
        let new_values = new.map(|n| (self.function)(n)).unwrap_or_default();
        if old_values == new_values {
            return;
        }
        for value in old_values {
            if let Some(keys) = self.entries.get_mut(&value) {
                keys.remove(key);
                if keys.is_empty() {
                    self.entries.remove(&value);
                }
            }
        }
        for value in new_values {
            self.entries.entry(value).or_default().insert(key.clone());
        }
    }
}
