//! The thread-safe store of `Arc<K>` objects with named indexes, and its single writer.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hashbrown::HashMap;
use hashbrown::hash_map::Entry;
use kube::Resource;
use parking_lot::RwLock;
use tokio::sync::watch;

use super::compact::{Compact, Decode};
use super::fence::{Fence, Waited};
use super::index::Index;
use super::key::{KeyMap, KeyRef, KeySet};
use super::resource_version::{self, NewestPerNamespace};
use super::slot::Slot;
use super::{Change, Deleted, Error, NAMESPACE_INDEX, ObjectKey, Result};

/// Creates an empty store: a read-only [`Store`] handle (cheap to clone, hand it to readers)
/// and the [`Writer`] that fills it. The store starts with the [`NAMESPACE_INDEX`].
/// An informer keeps its objects serialized instead with
/// [`informer::Config::compact`](crate::informer::Config::compact).
#[must_use]
pub fn store<K: Resource + 'static>() -> (Store<K>, Writer<K>) {
    with_compact(None)
}

/// Creates an empty compact store: like [`store`], but each object is kept as compact JSON (a
/// realistic Pod: 4 KB instead of 19 KB) and decoded when read. The `hot` objects read most
/// recently stay decoded (up to `hot`, rounded up to even), so a controller that reads the same
/// objects again pays the decode once.
///
/// Reads still hand out `Arc<K>`; [`Store::get`] of a cold object decodes it (tens of
/// microseconds for a Pod, see the book's performance chapter) and makes it hot, while
/// [`Store::list`] and [`Store::by_index`] decode every cold object they return without making
/// it hot, so prefer [`Store::keys`] or [`Store::index_keys`] with `get` on large stores. Two
/// reads of a cold object give equal objects in different allocations. Index functions and
/// resourceVersion checks work as in the default store; an update or a delete decodes the
/// previous state once, for the indexes and for the change it reports.
///
/// Users switch compaction on in one place, [`informer::Config::compact`](crate::informer::Config::compact);
/// this constructor is for the crate's tests and, through the `testing` feature, benchmarks.
#[cfg(any(test, feature = "testing"))]
#[must_use]
pub(crate) fn compact_store<K>(hot: usize) -> (Store<K>, Writer<K>)
where
    K: Resource + serde::Serialize + serde::de::DeserializeOwned + 'static,
{
    let encode: super::compact::Encode<K> = Arc::new(|obj: &K| serde_json::to_vec(obj));
    let decode: Decode<K> = Arc::new(|json: &[u8]| serde_json::from_slice(json));
    with_compact(Some(Compact::new(hot, decode, Some(encode))))
}

/// A compact store whose writer is handed each object's JSON along with the object (an
/// informer's reflector has it already), so `K` need not be `Serialize`.
pub(crate) fn compact_store_with<K: Resource + 'static>(
    hot: usize,
    decode: Decode<K>,
) -> (Store<K>, Writer<K>) {
    with_compact(Some(Compact::new(hot, decode, None)))
}

/// A store that keeps objects decoded (`None`) or compact.
fn with_compact<K: Resource + 'static>(compact: Option<Compact<K>>) -> (Store<K>, Writer<K>) {
    let mut indexes = HashMap::new();
    indexes.insert(NAMESPACE_INDEX.to_owned(), Index::by_namespace());
    let inner = Arc::new(RwLock::new(Inner {
        objects: KeyMap::default(),
        indexes,
        compact,
        newest: NewestPerNamespace::default(),
        changes: watch::Sender::new(0),
    }));
    (
        Store {
            inner: Arc::clone(&inner),
        },
        Writer { inner },
    )
}

/// A read-only view of the cache: lookups, listings and index queries hand out `Arc<K>`,
/// never deep copies (a [compact](crate::informer::Config::compact) store decodes its cold
/// objects).
/// Cheap to clone.
#[doc(alias = "Indexer")]
#[doc(alias = "Lister")]
pub struct Store<K> {
    inner: Arc<RwLock<Inner<K>>>,
}

/// The only handle that changes the store; owned by the informer's reflector.
pub struct Writer<K> {
    inner: Arc<RwLock<Inner<K>>>,
}

/// A relist in progress: objects are applied in place as pages arrive; [`Relist::finish`]
/// then removes whatever was not seen.
#[doc(alias = "Replace")]
pub struct Relist<'a, K> {
    writer: &'a Writer<K>,
    /// The keys listed so far; `None` when the store was empty at the start (an initial list:
    /// nothing cached can be missing from it).
    seen: Option<KeySet>,
    /// The one namespace this relist covers (one reflector of an informer over several
    /// namespaces); `None`: the whole store.
    namespace: Option<String>,
    /// The newest resourceVersion listed per namespace: a list's pages come in no order of
    /// version, so the store has passed them only once the relist is finished.
    newest: NewestPerNamespace,
}

struct Inner<K> {
    /// Hashed by each key's kept hash (see [`KeyMap`]).
    objects: KeyMap<Slot<K>>,
    indexes: HashMap<String, Index<K>>,
    /// Set for a compact store.
    compact: Option<Compact<K>>,
    /// The newest resourceVersion the store has applied, per namespace (`None`: cluster-scoped
    /// objects): one watch brings a namespace's changes in order, so every change up to it is in.
    newest: NewestPerNamespace,
    /// Bumped after every change while someone waits for one (see [`Store::wait_for`]).
    changes: watch::Sender<u64>,
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.read();
        f.debug_struct("Store")
            .field("len", &inner.objects.len())
            .field("compact", &inner.compact.is_some())
            .finish()
    }
}

impl<K> fmt::Debug for Writer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer").finish_non_exhaustive()
    }
}

impl<K> fmt::Debug for Relist<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Relist")
            .field("seen", &self.seen.as_ref().map(KeySet::len))
            .finish()
    }
}

impl<K> Store<K> {
    /// The object with this key. In a compact store a cold object is decoded and becomes hot.
    ///
    /// The lookup uses the hash the key keeps and allocates nothing.
    #[must_use]
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let inner = self.inner.read();
        let slot = inner.objects.get(key)?;
        inner.resolve(key, slot, true)
    }

    /// The object `name` in `namespace` (`None` for cluster-scoped objects), as [`Self::get`]
    /// without building an [`ObjectKey`]: nothing is allocated.
    #[must_use]
    pub fn get_by_name(&self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        let inner = self.inner.read();
        let (key, slot) = inner.objects.get_key_value(&KeyRef::new(namespace, name))?;
        inner.resolve(key, slot, true)
    }

    /// Every cached object, in no particular order.
    #[must_use]
    pub fn list(&self) -> Vec<Arc<K>> {
        let inner = self.inner.read();
        inner
            .objects
            .iter()
            .filter_map(|(key, slot)| inner.resolve(key, slot, false))
            .collect()
    }

    /// The keys of every cached object, in no particular order.
    #[must_use]
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.inner.read().objects.keys().cloned().collect()
    }

    /// How many objects are cached.
    #[must_use]
    pub fn len(&self) -> usize {
        self.inner.read().objects.len()
    }

    /// Whether the cache is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.inner.read().objects.is_empty()
    }

    /// Whether objects are kept serialized (see
    /// [`informer::Config::compact`](crate::informer::Config::compact)).
    #[must_use]
    pub fn is_compact(&self) -> bool {
        self.inner.read().compact.is_some()
    }

    /// How many objects a compact store keeps decoded.
    #[cfg(test)]
    pub(super) fn hot_len(&self) -> usize {
        self.inner
            .read()
            .compact
            .as_ref()
            .map_or(0, Compact::hot_len)
    }

    /// The objects whose index function `index` returns `value`.
    ///
    /// # Errors
    /// [`Error::UnknownIndex`] if no such index was added.
    #[doc(alias = "ByIndex")]
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>> {
        let inner = self.inner.read();
        let index = inner.index(index)?;
        Ok(index
            .entries
            .get(value)
            .into_iter()
            .flatten()
            .filter_map(|key| inner.resolve(key, inner.objects.get(key)?, false))
            .collect())
    }

    /// The keys of the objects whose index function `index` returns `value`.
    ///
    /// # Errors
    /// [`Error::UnknownIndex`] if no such index was added.
    #[doc(alias = "IndexKeys")]
    pub fn index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectKey>> {
        let inner = self.inner.read();
        let index = inner.index(index)?;
        Ok(index
            .entries
            .get(value)
            .into_iter()
            .flatten()
            .cloned()
            .collect())
    }

    /// Every value that index `index` holds at least one object under.
    ///
    /// # Errors
    /// [`Error::UnknownIndex`] if no such index was added.
    #[doc(alias = "ListIndexFuncValues")]
    pub fn index_values(&self, index: &str) -> Result<Vec<String>> {
        let inner = self.inner.read();
        let index = inner.index(index)?;
        Ok(index.entries.keys().cloned().collect())
    }

    /// The newest resourceVersion the store has applied in `namespace` (`None`: of the
    /// cluster-scoped objects).
    #[must_use]
    pub fn newest_resource_version(&self, namespace: Option<&str>) -> Option<String> {
        let inner = self.inner.read();
        inner.newest.get(namespace).map(str::to_owned)
    }

    /// The newest resourceVersion the store has applied in any namespace (in integer order).
    pub(crate) fn newest_overall(&self) -> Option<String> {
        let inner = self.inner.read();
        let mut newest: Option<&str> = None;
        for (_, version) in inner.newest.iter() {
            newest = Some(newest.map_or(version, |n| resource_version::newer(n, version)));
        }
        newest.map(str::to_owned)
    }
}

impl<K: Resource> Store<K> {
    /// Whether the store has passed `fence`.
    pub(crate) fn passed(&self, fence: &Fence) -> bool {
        let inner = self.inner.read();
        let newest = |namespace: Option<&str>| inner.newest.get(namespace);
        match fence {
            Fence::Version { key, version } => {
                let cached = inner.objects.get(key).and_then(Slot::resource_version);
                let passed = |have: Option<&str>| {
                    have.is_some_and(|have| resource_version::has_passed(have, version))
                };
                passed(cached) || passed(newest(key.namespace()))
            }
            Fence::Gone { key, uid } => inner.objects.get(key).is_none_or(|slot| {
                let obj = inner.resolve(key, slot, false);
                obj.is_none_or(|obj| obj.meta().uid.as_deref() != Some(uid.as_str()))
            }),
            Fence::Namespace { namespace, version } => newest(namespace.as_deref())
                .is_some_and(|have| resource_version::has_passed(have, version)),
        }
    }

    /// Waits until the store has passed every fence of `fences`, for at most `timeout`: woken
    /// by the store's changes, never polling.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads the store.
    pub(crate) async fn wait_for(&self, fences: &[Fence], timeout: Duration) -> Waited {
        let all_passed = || fences.iter().all(|fence| self.passed(fence));
        if all_passed() {
            return Waited::No;
        }
        // Subscribed before the checks below, so no change between a check and the wait is missed.
        let mut changes = self.changes();
        let caught_up = async {
            while !all_passed() {
                if changes.changed().await.is_err() {
                    // The writer is gone: nothing more will come.
                    return false;
                }
            }
            true
        };
        match tokio::time::timeout(timeout, caught_up).await {
            Ok(true) => Waited::CaughtUp,
            Ok(false) | Err(_) => Waited::TimedOut,
        }
    }

    /// A receiver that sees a new value after every change the store applies from now on.
    fn changes(&self) -> watch::Receiver<u64> {
        self.inner.read().changes.subscribe()
    }
}

impl<K: Resource> Writer<K> {
    /// A read-only handle on the same store.
    #[must_use]
    pub fn store(&self) -> Store<K> {
        Store {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Adds a named index and fills it from the objects already cached.
    ///
    /// # Errors
    /// [`Error::IndexExists`] if the name is taken (the namespace index is built in).
    #[doc(alias = "AddIndexers")]
    pub fn add_index<F>(&self, name: &str, function: F) -> Result<()>
    where
        F: Fn(&K) -> Vec<String> + Send + Sync + 'static,
    {
        let mut inner = self.inner.write();
        if inner.indexes.contains_key(name) {
            return Err(Error::IndexExists(name.to_owned()));
        }
        let mut index = Index::new(Arc::new(function));
        for (key, slot) in &inner.objects {
            if let Some(obj) = inner.resolve(key, slot, false) {
                index.update(key, None, Some(&obj));
            }
        }
        inner.indexes.insert(name.to_owned(), index);
        Ok(())
    }

    /// Stores `obj` (added or replacing the object with its key) and says what changed: nothing
    /// when the cached object has the same resourceVersion (the cached `Arc` is then kept).
    pub fn apply(&self, obj: Arc<K>) -> Option<Change<K>> {
        self.put(ObjectKey::of(obj.as_ref()), obj, None, true)
    }

    /// As [`Self::apply`], with the object's JSON for a compact store to keep (ignored by a
    /// default store), so that it need not encode the object again.
    pub(crate) fn apply_with_json(&self, obj: Arc<K>, json: Option<Vec<u8>>) -> Option<Change<K>> {
        self.put(ObjectKey::of(obj.as_ref()), obj, json, true)
    }

    /// Removes the object with the key of `last` (its final state); nothing if it was not cached.
    pub fn delete(&self, last: Arc<K>) -> Option<Change<K>> {
        self.remove(last, true)
    }

    /// As [`Self::delete`]; the store passes the deletion's resourceVersion if `advance`.
    fn remove(&self, last: Arc<K>, advance: bool) -> Option<Change<K>> {
        let meta = last.meta();
        let found = KeyRef::new(
            meta.namespace.as_deref(),
            meta.name.as_deref().unwrap_or_default(),
        );
        let mut inner = self.inner.write();
        if advance {
            inner.advance(meta.namespace.as_deref(), meta.resource_version.as_deref());
        }
        let removed = inner.objects.remove_entry(&found);
        let Some((key, slot)) = removed else {
            inner.notify();
            return None;
        };
        let old = inner.resolve(&key, &slot, false);
        inner.reindex(&key, old.as_deref(), None);
        if let Some(compact) = &inner.compact {
            compact.forget(&key);
        }
        inner.notify();
        Some(Change::Deleted(Deleted::Final(last)))
    }

    /// Starts a relist: apply every listed object with [`Relist::apply`], then call
    /// [`Relist::finish`].
    #[must_use]
    pub fn relist(&self) -> Relist<'_, K> {
        let empty = self.inner.read().objects.is_empty();
        Relist {
            writer: self,
            seen: (!empty).then(KeySet::default),
            namespace: None,
            newest: NewestPerNamespace::default(),
        }
    }

    /// As [`Self::relist`], for the objects of one namespace: [`Relist::finish`] removes only
    /// objects of `namespace` that were not listed, leaving other namespaces' objects alone.
    /// One store can so be filled by one list and watch per namespace.
    pub(crate) fn relist_in(&self, namespace: &str) -> Relist<'_, K> {
        let empty = self
            .inner
            .read()
            .index(NAMESPACE_INDEX)
            .map_or(true, |index| !index.entries.contains_key(namespace));
        Relist {
            writer: self,
            seen: (!empty).then(KeySet::default),
            namespace: Some(namespace.to_owned()),
            newest: NewestPerNamespace::default(),
        }
    }

    /// Stores `obj` under `key` (its key, built by the caller before the lock is taken) with one
    /// lookup; the store passes its resourceVersion if `advance`.
    fn put(
        &self,
        key: ObjectKey,
        obj: Arc<K>,
        json: Option<Vec<u8>>,
        advance: bool,
    ) -> Option<Change<K>> {
        let mut guard = self.inner.write();
        if advance {
            let meta = obj.meta();
            guard.advance(meta.namespace.as_deref(), meta.resource_version.as_deref());
        }
        guard.notify();
        let Inner {
            objects,
            indexes,
            compact,
            ..
        } = &mut *guard;
        let compact = compact.as_ref();
        let pack = |key: &ObjectKey| match compact {
            Some(compact) => {
                compact.refresh(key, &obj);
                compact
                    .encode(&obj, json)
                    .map_or_else(|| Slot::Decoded(Arc::clone(&obj)), Slot::Encoded)
            }
            None => Slot::Decoded(Arc::clone(&obj)),
        };
        match objects.entry(key) {
            Entry::Occupied(mut entry) => {
                let was = entry.get().resource_version();
                if was.is_some() && was == obj.meta().resource_version.as_deref() {
                    return None;
                }
                let old = resolve(compact, entry.key(), entry.get(), false);
                let slot = pack(entry.key());
                reindex(indexes, entry.key(), old.as_deref(), Some(&obj));
                *entry.get_mut() = slot;
                Some(match old {
                    Some(old) => Change::Updated { old, new: obj },
                    None => Change::Added(obj),
                })
            }
            Entry::Vacant(entry) => {
                let slot = pack(entry.key());
                reindex(indexes, entry.key(), None, Some(&obj));
                entry.insert(slot);
                Some(Change::Added(obj))
            }
        }
    }
}

impl<K: Resource> Relist<'_, K> {
    /// Stores one listed object in place, as [`Writer::apply`] does.
    pub fn apply(&mut self, obj: Arc<K>) -> Option<Change<K>> {
        self.apply_with_json(obj, None)
    }

    /// As [`Self::apply`], with the object's JSON (see [`Writer::apply_with_json`]).
    pub(crate) fn apply_with_json(
        &mut self,
        obj: Arc<K>,
        json: Option<Vec<u8>>,
    ) -> Option<Change<K>> {
        let key = ObjectKey::of(obj.as_ref());
        if let Some(seen) = &mut self.seen {
            seen.insert(key.clone());
        }
        self.remember(obj.meta());
        self.writer.put(key, obj, json, false)
    }

    /// Removes a deleted object while the relist is in progress (a streaming list may carry
    /// deletions before its end), as [`Writer::delete`] does.
    pub(crate) fn delete(&mut self, last: Arc<K>) -> Option<Change<K>> {
        if let Some(seen) = &mut self.seen {
            seen.remove(&ObjectKey::of(last.as_ref()));
        }
        self.remember(last.meta());
        self.writer.remove(last, false)
    }

    /// Notes the resourceVersion of a listed object, for the store to pass at the end.
    fn remember(&mut self, meta: &kube::api::ObjectMeta) {
        let Some(version) = meta.resource_version.as_deref() else {
            return;
        };
        self.newest.note(meta.namespace.as_deref(), version);
    }

    /// Removes every cached object the relist did not see; each is a deletion whose final
    /// state is unknown.
    #[must_use]
    pub fn finish(self) -> Vec<Change<K>> {
        let mut inner = self.writer.inner.write();
        for (namespace, version) in self.newest.iter() {
            inner.advance(namespace, Some(version));
        }
        inner.notify();
        let Some(seen) = self.seen else {
            return Vec::new();
        };
        let gone: Vec<ObjectKey> = inner
            .objects
            .keys()
            .filter(|key| !seen.contains(*key))
            .filter(|key| {
                self.namespace
                    .as_deref()
                    .is_none_or(|ns| key.namespace() == Some(ns))
            })
            .cloned()
            .collect();
        gone.into_iter()
            .filter_map(|key| {
                let slot = inner.objects.remove(&key)?;
                let old = inner.resolve(&key, &slot, false)?;
                inner.reindex(&key, Some(&old), None);
                if let Some(compact) = &inner.compact {
                    compact.forget(&key);
                }
                Some(Change::Deleted(Deleted::FinalStateUnknown(old)))
            })
            .collect()
    }
}

impl<K> Inner<K> {
    /// Notes that the store has applied `version` in `namespace`.
    fn advance(&mut self, namespace: Option<&str>, version: Option<&str>) {
        let Some(version) = version else {
            return;
        };
        self.newest.note(namespace, version);
    }

    /// Wakes whoever waits for a change (see [`Store::wait_for`]); nothing when nobody waits.
    fn notify(&self) {
        if self.changes.receiver_count() > 0 {
            self.changes.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// The index named `name`.
    fn index(&self, name: &str) -> Result<&Index<K>> {
        self.indexes
            .get(name)
            .ok_or_else(|| Error::UnknownIndex(name.to_owned()))
    }

    fn resolve(&self, key: &ObjectKey, slot: &Slot<K>, remember: bool) -> Option<Arc<K>> {
        resolve(self.compact.as_ref(), key, slot, remember)
    }

    fn reindex(&mut self, key: &ObjectKey, old: Option<&K>, new: Option<&K>) {
        reindex(&mut self.indexes, key, old, new);
    }
}

/// The object in `slot`; a compact store decodes it, and makes it hot if `remember`.
fn resolve<K>(
    compact: Option<&Compact<K>>,
    key: &ObjectKey,
    slot: &Slot<K>,
    remember: bool,
) -> Option<Arc<K>> {
    match (slot, compact) {
        (Slot::Decoded(obj), _) => Some(Arc::clone(obj)),
        (Slot::Encoded(encoded), Some(compact)) => compact.read(key, encoded, remember),
        (Slot::Encoded(_), None) => None,
    }
}

/// Moves `key` in every index from the values of `old` to those of `new`.
fn reindex<K>(
    indexes: &mut HashMap<String, Index<K>>,
    key: &ObjectKey,
    old: Option<&K>,
    new: Option<&K>,
) {
    for index in indexes.values_mut() {
        index.update(key, old, new);
    }
}

#[cfg(test)]
#[path = "tests/store.rs"]
mod tests;
