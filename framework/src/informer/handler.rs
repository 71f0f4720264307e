//! Event handlers: a trait, and closures assembled with `handler_fns()`.

use std::fmt;
use std::sync::Arc;

use crate::cache::Deleted;

/// Receives an informer's changes, one at a time and in order per object.
///
/// Each method runs on the handler's own delivery task, so a slow handler delays only itself
/// (one that blocks holds a runtime thread: hand blocking work to `spawn_blocking`); changes it
/// has not taken yet are coalesced per object (see [`SharedInformer::add_handler`](super::SharedInformer::add_handler)).
#[doc(alias = "ResourceEventHandler")]
pub trait EventHandler<K>: Send + Sync + 'static {
    /// An object appeared (or was cached before this handler was added).
    fn on_add(&self, obj: Arc<K>) {
        let _ = obj;
    }

    /// An object changed; on resync `old` and `new` are the same object.
    fn on_update(&self, old: Arc<K>, new: Arc<K>) {
        let _ = (old, new);
    }

    /// An object went away.
    fn on_delete(&self, deleted: Deleted<K>) {
        let _ = deleted;
    }
}

type AddFn<K> = Box<dyn Fn(Arc<K>) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(Arc<K>, Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(Deleted<K>) + Send + Sync>;

/// An [`EventHandler`] made of closures; methods without a closure do nothing.
#[doc(alias = "ResourceEventHandlerFuncs")]
pub struct HandlerFns<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

/// Starts a handler made of closures: `handler_fns().on_add(..).on_update(..).on_delete(..)`.
#[must_use]
pub fn handler_fns<K>() -> HandlerFns<K> {
    HandlerFns {
        add: None,
        update: None,
        delete: None,
    }
}

impl<K> HandlerFns<K> {
    /// Called with each new object.
    #[must_use]
    pub fn on_add(mut self, f: impl Fn(Arc<K>) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Called with the old and the new state of each changed object.
    #[must_use]
    pub fn on_update(mut self, f: impl Fn(Arc<K>, Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Called with each deleted object.
    #[must_use]
    pub fn on_delete(mut self, f: impl Fn(Deleted<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K> fmt::Debug for HandlerFns<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerFns")
            .field("on_add", &self.add.is_some())
            .field("on_update", &self.update.is_some())
            .field("on_delete", &self.delete.is_some())
            .finish()
    }
}

impl<K: Send + Sync + 'static> EventHandler<K> for HandlerFns<K> {
    fn on_add(&self, obj: Arc<K>) {
        if let Some(f) = &self.add {
            f(obj);
        }
    }

    fn on_update(&self, old: Arc<K>, new: Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }

    fn on_delete(&self, deleted: Deleted<K>) {
        if let Some(f) = &self.delete {
            f(deleted);
        }
    }
}
