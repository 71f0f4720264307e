//! The store and the handlers behind it: every change is stored first, then buffered for each
//! handler, whose own task delivers it.

use std::sync::Arc;

use kube::Resource;
use parking_lot::Mutex;

use super::buffer::Buffer;
use super::listener::Listener;
use super::progress::Progress;
use crate::cache::{self, Change, ObjectKey, Store, Writer};

/// Stores what the reflector sends and buffers each resulting change for every handler.
///
/// Knows nothing of where changes come from: the reflector (or a test) calls it, never the
/// reverse. On the caller's task a change takes two locks, one inside the other for a few
/// instructions: the handlers' (below) and the store's. No handler runs under either; each runs
/// on its own task ([`FanOut::deliver`]).
pub(crate) struct FanOut<K> {
    writer: Writer<K>,
    store: Store<K>,
    /// Whether a change is stored before the informer's first complete list.
    progress: Arc<Progress>,
    /// The handlers and their buffers; held while the store changes and the change is buffered,
    /// so a handler added meanwhile sees every change exactly once.
    handlers: Mutex<Vec<Slot<K>>>,
}

/// One handler and what it has yet to be told.
struct Slot<K> {
    listener: Arc<Listener<K>>,
    buffer: Buffer<K>,
}

/// A complete list being stored, page by page or event by event; see [`FanOut::relist`].
pub(crate) struct Relist<'a, K> {
    fan_out: &'a FanOut<K>,
    /// The store's side of the list.
    in_store: cache::Relist<'a, K>,
    /// Objects applied so far.
    applied: u64,
}

impl<K: Resource> FanOut<K> {
    /// How many objects have a change `listener` has not taken yet.
    pub(crate) fn pending(&self, listener: &Arc<Listener<K>>) -> usize {
        self.handlers
            .lock()
            .iter()
            .find(|slot| Arc::ptr_eq(&slot.listener, listener))
            .map_or(0, |slot| slot.buffer.len())
    }
}

impl<K: Resource + Send + Sync + 'static> FanOut<K> {
    pub(crate) fn new((store, writer): (Store<K>, Writer<K>), progress: Arc<Progress>) -> Self {
        Self {
            writer,
            store,
            progress,
            handlers: Mutex::new(Vec::new()),
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
        self.handlers.lock().len()
    }

    /// Adds a handler; it first gets an add for each cached object.
    pub(crate) fn register(&self, listener: &Arc<Listener<K>>) {
        let mut handlers = self.handlers.lock();
        let mut buffer = Buffer::new();
        let listed = !self.progress.is_listed();
        for obj in self.store.list() {
            buffer.push(ObjectKey::of(obj.as_ref()), Change::Added(obj), listed);
        }
        handlers.push(Slot {
            listener: Arc::clone(listener),
            buffer,
        });
        drop(handlers);
        listener.wake();
    }

    /// Removes a handler and stops its delivery; `false` if it was not one (any more).
    pub(crate) fn remove(&self, target: &Arc<Listener<K>>) -> bool {
        let mut handlers = self.handlers.lock();
        let before = handlers.len();
        handlers.retain(|slot| !Arc::ptr_eq(&slot.listener, target));
        let removed = handlers.len() < before;
        drop(handlers);
        if removed {
            target.stop();
        }
        removed
    }

    /// Every handler, e.g. to start their deliveries.
    pub(crate) fn listeners(&self) -> Vec<Arc<Listener<K>>> {
        self.handlers
            .lock()
            .iter()
            .map(|slot| Arc::clone(&slot.listener))
            .collect()
    }

    /// Stops every handler's delivery (after the change each is handling).
    pub(crate) fn stop(&self) {
        for listener in self.listeners() {
            listener.stop();
        }
    }

    /// Queues a resync of every cached object for `listener`, unless it was removed.
    pub(crate) fn resync(&self, listener: &Arc<Listener<K>>) -> bool {
        let mut handlers = self.handlers.lock();
        let Some(slot) = handlers
            .iter_mut()
            .find(|slot| Arc::ptr_eq(&slot.listener, listener))
        else {
            return false;
        };
        for obj in self.store.list() {
            slot.buffer.push_resync(&obj);
        }
        drop(handlers);
        listener.wake();
        true
    }

    /// Delivers `listener`'s changes, in order, until it is stopped: the handler's own task,
    /// so a slow handler delays only itself. It takes the whole buffer at once, swapping in the
    /// empty one it drained last (the lock is held for the swap alone), then hands the changes
    /// over outside the lock, one unit of tokio's cooperative budget each, so a long backlog
    /// gives the thread up now and then. Changes arriving meanwhile coalesce in the swapped-in
    /// buffer.
    pub(crate) async fn deliver(&self, listener: &Listener<K>) {
        let mut taken = Buffer::new();
        loop {
            if !self.swap(listener, &mut taken) {
                return;
            }
            if taken.is_empty() {
                if listener.is_stopped() {
                    return;
                }
                listener.ready().await;
                continue;
            }
            while let Some(popped) = taken.pop() {
                if listener.is_stopped() {
                    return;
                }
                listener.deliver(popped);
                tokio::task::coop::consume_budget().await;
            }
        }
    }

    /// Stores a watched object (with its JSON, for a compact store) and tells every handler.
    pub(crate) fn apply(&self, obj: Arc<K>, json: Option<Vec<u8>>) {
        let mut handlers = self.handlers.lock();
        let change = self.writer.apply_with_json(obj, json);
        let woken = self.hand_out(&mut handlers, change);
        drop(handlers);
        wake(woken);
    }

    /// Removes a deleted object and tells every handler.
    pub(crate) fn delete(&self, obj: Arc<K>) {
        let mut handlers = self.handlers.lock();
        let change = self.writer.delete(obj);
        let woken = self.hand_out(&mut handlers, change);
        drop(handlers);
        wake(woken);
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

    /// Swaps `listener`'s buffer with `drained` (empty); `false` if it is not a handler (any
    /// more).
    fn swap(&self, listener: &Listener<K>, drained: &mut Buffer<K>) -> bool {
        let mut handlers = self.handlers.lock();
        let Some(slot) = handlers
            .iter_mut()
            .find(|slot| std::ptr::eq(Arc::as_ptr(&slot.listener), listener))
        else {
            return false;
        };
        std::mem::swap(&mut slot.buffer, drained);
        true
    }

    /// Buffers `change` for every handler; the handlers whose buffers were empty, to wake once
    /// the lock is released.
    fn hand_out(
        &self,
        handlers: &mut [Slot<K>],
        change: impl IntoIterator<Item = Change<K>>,
    ) -> Vec<Arc<Listener<K>>> {
        let listed = !self.progress.is_listed();
        let mut woken = Vec::new();
        for change in change {
            // One key for every handler's buffer, computed once.
            let key = change.key();
            for slot in handlers.iter_mut() {
                if slot.buffer.is_empty() {
                    woken.push(Arc::clone(&slot.listener));
                }
                slot.buffer.push(key.clone(), change.clone(), listed);
            }
        }
        woken
    }
}

impl<K: Resource + Send + Sync + 'static> Relist<'_, K> {
    /// Stores one listed object (with its JSON, for a compact store) and tells every handler.
    pub(crate) fn apply(&mut self, obj: Arc<K>, json: Option<Vec<u8>>) {
        self.applied += 1;
        let mut handlers = self.fan_out.handlers.lock();
        let change = self.in_store.apply_with_json(obj, json);
        let woken = self.fan_out.hand_out(&mut handlers, change);
        drop(handlers);
        wake(woken);
    }

    /// How many objects [`Self::apply`] stored so far (changed or not).
    pub(crate) fn applied(&self) -> u64 {
        self.applied
    }

    /// Removes an object deleted before the list ended and tells every handler.
    pub(crate) fn delete(&mut self, obj: Arc<K>) {
        let mut handlers = self.fan_out.handlers.lock();
        let change = self.in_store.delete(obj);
        let woken = self.fan_out.hand_out(&mut handlers, change);
        drop(handlers);
        wake(woken);
    }

    /// Ends the list: removes what it did not have and tells every handler.
    pub(crate) fn finish(self) {
        let mut handlers = self.fan_out.handlers.lock();
        let woken = self.fan_out.hand_out(&mut handlers, self.in_store.finish());
        drop(handlers);
        wake(woken);
    }
}

fn wake<K: 'static>(listeners: Vec<Arc<Listener<K>>>) {
    for listener in listeners {
        listener.wake();
    }
}
