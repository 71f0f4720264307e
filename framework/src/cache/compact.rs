//! Keeps cached objects as compact JSON, decoding them on read, with the hot ones kept decoded.

use std::sync::Arc;

use kube::Resource;
use parking_lot::Mutex;

use super::ObjectKey;
use super::hot::Hot;
use super::slot::Encoded;
use crate::error::chain;

/// Turns a cached object's JSON back into the object.
pub(crate) type Decode<K> = Arc<dyn Fn(&[u8]) -> serde_json::Result<K> + Send + Sync>;

/// Turns an object into the JSON the store keeps.
pub(crate) type Encode<K> = Arc<dyn Fn(&K) -> serde_json::Result<Vec<u8>> + Send + Sync>;

/// The codec and the hot set of a compact store.
pub(super) struct Compact<K> {
    decode: Decode<K>,
    encode: Option<Encode<K>>,
    hot: Mutex<Hot<K>>,
}

impl<K> Compact<K> {
    /// Keeps the `hot` most recently read objects decoded; objects are encoded with `encode`,
    /// or only ever stored with the JSON they came with if it is `None`.
    pub(super) fn new(hot: usize, decode: Decode<K>, encode: Option<Encode<K>>) -> Self {
        Self {
            decode,
            encode,
            hot: Mutex::new(Hot::new(hot)),
        }
    }

    /// The object behind `encoded`: the hot one, or a fresh decode that becomes hot when
    /// `remember` is set. The caller holds the store's lock, so no write can interleave.
    pub(super) fn read(
        &self,
        key: &ObjectKey,
        encoded: &Encoded,
        remember: bool,
    ) -> Option<Arc<K>> {
        let found = if remember {
            self.hot.lock().get(key)
        } else {
            self.hot.lock().peek(key)
        };
        if found.is_some() {
            return found;
        }
        match (self.decode)(encoded.json()) {
            Ok(obj) => {
                let obj = Arc::new(obj);
                if remember {
                    self.hot.lock().insert(key.clone(), Arc::clone(&obj));
                }
                Some(obj)
            }
            Err(err) => {
                // The store encoded this JSON itself, so this is a broken invariant; the object
                // reads as absent rather than taking the reader down.
                tracing::error!(key = %key, error = %chain(&err), "a compact store could not decode an object it holds");
                None
            }
        }
    }

    /// The object's new state replaces its hot one, if it is hot.
    pub(super) fn refresh(&self, key: &ObjectKey, obj: &Arc<K>) {
        self.hot.lock().refresh(key, obj);
    }

    /// A deleted object is no longer hot.
    pub(super) fn forget(&self, key: &ObjectKey) {
        self.hot.lock().remove(key);
    }

    /// How many objects are hot.
    #[cfg(test)]
    pub(super) fn hot_len(&self) -> usize {
        self.hot.lock().len()
    }
}

impl<K: Resource> Compact<K> {
    /// Packs `obj` with `json` (or its own encoding); `None` if it cannot be encoded, in which
    /// case the store keeps it decoded.
    pub(super) fn encode(&self, obj: &K, json: Option<Vec<u8>>) -> Option<Encoded> {
        let json = match json {
            Some(json) => json,
            None => match (self.encode.as_ref()?)(obj) {
                Ok(json) => json,
                Err(err) => {
                    tracing::warn!(key = %ObjectKey::of(obj), error = %chain(&err), "keeping an object that does not encode decoded");
                    return None;
                }
            },
        };
        Some(Encoded::new(obj.meta().resource_version.as_deref(), &json))
    }
}
