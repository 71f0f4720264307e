//! Identifies a cached object by its namespace and name.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, LazyLock};

use hashbrown::Equivalent;
use kube::Resource;

/// The namespace/name of an object: how the cache and work queues address it.
///
/// Displays as `namespace/name`, or `name` for cluster-scoped objects, like client-go's
/// `MetaNamespaceKeyFunc`. Cloning one is one atomic increment: both strings live in one shared
/// allocation. Its hash (foldhash, seeded once per process) is computed when the key is built and
/// kept, so the cache, its indexes and the work queues never hash the strings again.
#[doc(alias = "MetaNamespaceKeyFunc")]
#[derive(Clone)]
pub struct ObjectKey {
    /// `namespace/name`, or `name` for cluster-scoped objects.
    text: Arc<str>,
    /// Where the name starts in `text`: 0 for a cluster-scoped object, else the namespace's
    /// length + 1.
    name_at: usize,
    /// [`hash_parts`] of the namespace and the name.
    hash: u64,
}

impl ObjectKey {
    /// The key of the object `name` in `namespace` (`None` for cluster-scoped objects).
    #[must_use]
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        // The text is assembled here so that the key costs one allocation (the `Arc`).
        thread_local!(static TEXT: RefCell<String> = const { RefCell::new(String::new()) });
        let hash = hash_parts(namespace, name);
        let (text, name_at) = match namespace {
            None => (Arc::from(name), 0),
            Some(namespace) => TEXT.with_borrow_mut(|text| {
                text.clear();
                text.push_str(namespace);
                text.push('/');
                text.push_str(name);
                let key = Arc::from(text.as_str());
                // A key built from a very long name leaves no large buffer behind.
                if text.capacity() > 1024 {
                    *text = String::new();
                }
                (key, namespace.len() + 1)
            }),
        };
        Self {
            text,
            name_at,
            hash,
        }
    }

    /// The key of `obj`, from its metadata (an object without a name gets the empty name).
    #[must_use]
    pub fn of<K: Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        Self::new(
            meta.namespace.as_deref(),
            meta.name.as_deref().unwrap_or_default(),
        )
    }

    /// The namespace, `None` for cluster-scoped objects.
    #[must_use]
    pub fn namespace(&self) -> Option<&str> {
        match self.name_at {
            0 => None,
            at => self.text.get(..at - 1),
        }
    }

    /// The name.
    #[must_use]
    pub fn name(&self) -> &str {
        self.text.get(self.name_at..).unwrap_or_default()
    }
}

/// The hasher of every object key in the process: foldhash, seeded at random once, so that keys
/// built anywhere hash alike and names chosen by cluster users cannot be aimed at one bucket.
static KEY_HASHER: LazyLock<foldhash::fast::RandomState> =
    LazyLock::new(foldhash::fast::RandomState::default);

/// The hash of the key of `name` in `namespace`, without building the key.
pub(crate) fn hash_parts(namespace: Option<&str>, name: &str) -> u64 {
    let mut hasher = KEY_HASHER.build_hasher();
    match namespace {
        Some(namespace) => {
            hasher.write_usize(namespace.len() + 1);
            hasher.write(namespace.as_bytes());
        }
        None => hasher.write_usize(0),
    }
    hasher.write(name.as_bytes());
    hasher.finish()
}

impl PartialEq for ObjectKey {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash
            && self.name_at == other.name_at
            && (Arc::ptr_eq(&self.text, &other.text) || self.text == other.text)
    }
}

impl Eq for ObjectKey {}

impl Hash for ObjectKey {
    /// Writes the kept hash: one `u64`, whatever the lengths of the strings.
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ObjectKey {
    /// By namespace (cluster-scoped first), then by name.
    fn cmp(&self, other: &Self) -> Ordering {
        (self.namespace(), self.name()).cmp(&(other.namespace(), other.name()))
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectKey")
            .field("namespace", &self.namespace())
            .field("name", &self.name())
            .finish()
    }
}

/// A key by reference: looks an object up by namespace and name without building an
/// [`ObjectKey`] (no allocation), hashing alike.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyRef<'a> {
    namespace: Option<&'a str>,
    name: &'a str,
    hash: u64,
}

impl<'a> KeyRef<'a> {
    pub(crate) fn new(namespace: Option<&'a str>, name: &'a str) -> Self {
        Self {
            namespace,
            name,
            hash: hash_parts(namespace, name),
        }
    }
}

impl Hash for KeyRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl Equivalent<ObjectKey> for KeyRef<'_> {
    fn equivalent(&self, key: &ObjectKey) -> bool {
        self.hash == key.hash && self.namespace == key.namespace() && self.name == key.name()
    }
}

/// Hashes an [`ObjectKey`] (or a [`KeyRef`]) by passing its kept hash through.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    /// Keys only ever write one `u64`; anything else is folded in, so that a map keyed by
    /// something else still works (slowly).
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, hash: u64) {
        self.0 = hash;
    }
}

/// Builds [`KeyHasher`]s: the hasher of every map keyed by [`ObjectKey`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BuildKeyHasher;

impl BuildHasher for BuildKeyHasher {
    type Hasher = KeyHasher;

    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(0)
    }
}

/// A map keyed by [`ObjectKey`] that uses each key's kept hash.
pub(crate) type KeyMap<V> = hashbrown::HashMap<ObjectKey, V, BuildKeyHasher>;

/// A set of [`ObjectKey`]s that uses each key's kept hash.
pub(crate) type KeySet = hashbrown::HashSet<ObjectKey, BuildKeyHasher>;

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn keys_display_as_namespace_slash_name_or_just_the_name() {
        assert_eq!(ObjectKey::new(Some("ns"), "a").to_string(), "ns/a");
        assert_eq!(ObjectKey::new(None, "node-1").to_string(), "node-1");
    }

    #[test]
    fn a_key_gives_back_its_namespace_and_name() {
        let namespaced = ObjectKey::new(Some("shop"), "web-1");
        assert_eq!(namespaced.namespace(), Some("shop"));
        assert_eq!(namespaced.name(), "web-1");
        let cluster = ObjectKey::new(None, "node-1");
        assert_eq!(cluster.namespace(), None);
        assert_eq!(cluster.name(), "node-1");
        let empty = ObjectKey::new(Some(""), "");
        assert_eq!((empty.namespace(), empty.name()), (Some(""), ""));
    }

    #[test]
    fn keys_are_equal_exactly_when_namespace_and_name_are() {
        let a = ObjectKey::new(Some("ns"), "a");
        assert_eq!(a, ObjectKey::new(Some("ns"), "a"));
        assert_eq!(
            BuildKeyHasher.hash_one(&a),
            BuildKeyHasher.hash_one(ObjectKey::new(Some("ns"), "a"))
        );
        assert_ne!(a, ObjectKey::new(Some("ns"), "b"));
        assert_ne!(a, ObjectKey::new(Some("nt"), "a"));
        // The same text, split differently.
        assert_ne!(ObjectKey::new(None, "ns/a"), a);
        assert_ne!(ObjectKey::new(Some("a"), "b"), ObjectKey::new(None, "a/b"));
    }

    #[test]
    fn a_borrowed_key_finds_what_the_owned_key_stored() {
        let mut map: KeyMap<u32> = KeyMap::default();
        map.insert(ObjectKey::new(Some("ns"), "a"), 1);
        map.insert(ObjectKey::new(None, "a"), 2);
        assert_eq!(map.get(&KeyRef::new(Some("ns"), "a")), Some(&1));
        assert_eq!(map.get(&KeyRef::new(None, "a")), Some(&2));
        assert_eq!(map.get(&KeyRef::new(Some("ns"), "b")), None);
        assert_eq!(map.get(&KeyRef::new(Some("a"), "")), None);
    }

    #[test]
    fn keys_sort_by_namespace_then_name_with_cluster_scoped_first() {
        let sorted: Vec<String> = [
            ObjectKey::new(Some("b"), "a"),
            ObjectKey::new(Some("a"), "z"),
            ObjectKey::new(None, "m"),
            ObjectKey::new(Some("a"), "b"),
        ]
        .into_iter()
        .collect::<BTreeSet<_>>()
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(sorted, ["m", "a/b", "a/z", "b/a"]);
    }

    #[test]
    fn a_clone_shares_the_strings() {
        let key = ObjectKey::new(Some("ns"), "a");
        let copy = key.clone();
        assert!(Arc::ptr_eq(&key.text, &copy.text));
        assert_eq!(Arc::strong_count(&key.text), 2);
    }
}
