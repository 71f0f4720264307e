//! The store and the handlers behind it: every change is stored first, then handed to each handler.

use std::sync::Arc;

use kube::Resource;
use parking_lot::Mutex;

use super::listener::Listener;
use crate::cache::{self, Change, Store, Writer};

/// Stores what the reflector sends and hands each resulting change to every handler's buffer.
///
/// Knows nothing of where changes come from: the reflector (or a test) calls it, never the
/// reverse.
pub(crate) struct FanOut<K> {
    writer: Writer<K>,
    store: Store<K>,
    /// The handlers; held while the store changes and the change is handed out, so a handler
    /// added meanwhile sees every change exactly once.
    listeners: Mutex<Vec<Arc<Listener<K>>>>,
}

/// A complete list being stored, page by page or event by event; see [`FanOut::relist`].
pub(crate) struct Relist<'a, K> {
    fan_out: &'a FanOut<K>,
    /// The store's side of the list.
    in_store: cache::Relist<'a, K>,
    /// Objects applied so far.
    applied: u64,
}

impl<K: Resource + Send + Sync + 'static> FanOut<K> {
    pub(crate) fn new((store, writer): (Store<K>, Writer<K>)) -> Self {
        Self {
            writer,
            store,
            listeners: Mutex::new(Vec::new()),
        }
    }

    /// The read side of the store.
    pub(crate) fn store(&self) -> &Store<K> {
        &self.store
    }

    /// The write side of the store, for indexes.
    pub(crate) fn writer(&self) -> &Writer<K> {
        &self.writer
    }

    /// How many handlers there are.
    pub(crate) fn handlers(&self) -> usize {
        self.listeners.lock().len()
    }

    /// Adds a handler; it first gets an add for each cached object.
    pub(crate) fn register(&self, listener: &Arc<Listener<K>>) {
        let mut listeners = self.listeners.lock();
        for obj in self.store.list() {
            listener.push(Change::Added(obj));
        }
        listeners.push(Arc::clone(listener));
    }

    /// Removes a handler and stops its delivery; `false` if it was not one (any more).
    pub(crate) fn remove(&self, target: &Arc<Listener<K>>) -> bool {
        let mut listeners = self.listeners.lock();
        let before = listeners.len();
        listeners.retain(|l| !Arc::ptr_eq(l, target));
        let removed = listeners.len() < before;
        drop(listeners);
        if removed {
            target.stop();
        }
        removed
    }

    /// Every handler, e.g. to start their deliveries.
    pub(crate) fn listeners(&self) -> Vec<Arc<Listener<K>>> {
        self.listeners.lock().clone()
    }

    /// Stops every handler's delivery (after the change each is handling).
    pub(crate) fn stop(&self) {
        for listener in self.listeners.lock().iter() {
            listener.stop();
        }
    }

    /// Queues a resync of every cached object for `listener`, unless it was removed.
    pub(crate) fn resync(&self, listener: &Listener<K>) -> bool {
        let _listeners = self.listeners.lock();
        if listener.is_stopped() {
            return false;
        }
        listener.push_resync(&self.store.list());
        true
    }

    /// Stores a watched object (with its JSON, for a compact store) and tells every handler.
    pub(crate) fn apply(&self, obj: Arc<K>, json: Option<Vec<u8>>) {
        let listeners = self.listeners.lock();
        if let Some(change) = self.writer.apply_with_json(obj, json) {
            hand_out(&listeners, &change);
        }
    }

    /// Removes a deleted object and tells every handler.
    pub(crate) fn delete(&self, obj: Arc<K>) {
        let listeners = self.listeners.lock();
        if let Some(change) = self.writer.delete(obj) {
            hand_out(&listeners, &change);
        }
    }

    /// Starts storing a complete list, of the whole store or of one `namespace` of it (one
    /// reflector of several): each object replaces its cached state in place, so the old and the
    /// new list never both live in full.
    pub(crate) fn relist(&self, namespace: Option<&str>) -> Relist<'_, K> {
        let relist = match namespace {
            Some(namespace) => self.writer.relist_in(namespace),
            None => self.writer.relist(),
        };
        Relist {
            fan_out: self,
            in_store: relist,
            applied: 0,
        }
    }
}

impl<K: Resource + Send + Sync + 'static> Relist<'_, K> {
    /// Stores one listed object (with its JSON, for a compact store) and tells every handler.
    pub(crate) fn apply(&mut self, obj: Arc<K>, json: Option<Vec<u8>>) {
        self.applied += 1;
        let listeners = self.fan_out.listeners.lock();
        if let Some(change) = self.in_store.apply_with_json(obj, json) {
            hand_out(&listeners, &change);
        }
    }

    /// How many objects [`Self::apply`] stored so far (changed or not).
    pub(crate) fn applied(&self) -> u64 {
        self.applied
    }

    /// Removes an object deleted before the list ended and tells every handler.
    pub(crate) fn delete(&mut self, obj: Arc<K>) {
        let listeners = self.fan_out.listeners.lock();
        if let Some(change) = self.in_store.delete(obj) {
            hand_out(&listeners, &change);
        }
    }

    /// Ends the list: removes what it did not have and tells every handler.
    pub(crate) fn finish(self) {
        let listeners = self.fan_out.listeners.lock();
        for change in self.in_store.finish() {
            hand_out(&listeners, &change);
        }
    }
}

fn hand_out<K>(listeners: &[Arc<Listener<K>>], change: &Change<K>)
where
    K: Resource + Send + Sync + 'static,
{
    for listener in listeners {
        listener.push(change.clone());
    }
}
