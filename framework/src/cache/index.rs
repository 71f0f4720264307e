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
    /// `None` for the [`NAMESPACE_INDEX`], whose one value each key holds itself.
    pub(super) function: Option<IndexFn<K>>,
    pub(super) entries: HashMap<String, KeySet>,
}

impl<K> Index<K> {
    pub(super) fn new(function: IndexFn<K>) -> Self {
        Self {
            function: Some(function),
            entries: HashMap::new(),
        }
    }

    /// The [`NAMESPACE_INDEX`]: an object's namespace is in its key and never changes, so an
    /// update neither calls a function nor allocates.
    pub(super) fn by_namespace() -> Self {
        Self {
            function: None,
            entries: HashMap::new(),
        }
    }

    /// Moves `key` from the values of `old` to those of `new`.
    pub(super) fn update(&mut self, key: &ObjectKey, old: Option<&K>, new: Option<&K>) {
        let Some(function) = &self.function else {
            let Some(namespace) = key.namespace() else {
                return;
            };
            match (old, new) {
                (None, Some(_)) => {
                    self.entries
                        .entry_ref(namespace)
                        .or_default()
                        .insert(key.clone());
                }
                (Some(_), None) => self.remove(namespace, key),
                _ => {}
            }
            return;
        };
        let old_values = old.map(|o| function(o)).unwrap_or_default();
        let new_values = new.map(|n| function(n)).unwrap_or_default();
        if old_values == new_values {
            return;
        }
        for value in old_values {
            self.remove(&value, key);
        }
        for value in new_values {
            self.entries.entry(value).or_default().insert(key.clone());
        }
    }

    /// Takes `key` out of the keys with `value`.
    fn remove(&mut self, value: &str, key: &ObjectKey) {
        if let Some(keys) = self.entries.get_mut(value) {
            keys.remove(key);
            if keys.is_empty() {
                self.entries.remove(value);
            }
        }
    }
}
