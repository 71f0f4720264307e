//! Where a listener delivers: a user's [`EventHandler`], or the framework's own handlers, which
//! also hear how a change came about.

use std::sync::Arc;

use super::EventHandler;
use super::buffer::{Pending, Popped};
use crate::cache::{Deleted, ObjectKey};

/// How a change delivered to one of the framework's own handlers came about.
#[derive(Clone, Debug)]
pub(crate) struct Hints {
    /// The object's key, computed once when the change was stored.
    pub(crate) key: ObjectKey,
    /// It stands for several changes of its object, some never delivered.
    pub(crate) coalesced: bool,
    /// Every change in it was stored before the informer's first complete list.
    pub(crate) listed: bool,
}

/// Receives the changes a listener pops, one at a time, on the listener's task.
pub(crate) trait Sink<K>: Send + Sync + 'static {
    /// Handles one popped change.
    fn deliver(&self, popped: Popped<K>);
}

/// A user's handler, told each change through the [`EventHandler`] methods.
pub(crate) struct UserHandler<K>(pub(crate) Box<dyn EventHandler<K>>);

impl<K: Send + Sync + 'static> Sink<K> for UserHandler<K> {
    fn deliver(&self, popped: Popped<K>) {
        let handler = &self.0;
        match popped.change {
            Pending::Added(obj) => handler.on_add(obj),
            Pending::Updated { old, new } => handler.on_update(old, new),
            Pending::Deleted(deleted) => handler.on_delete(deleted),
            Pending::Replaced { deleted, added } => {
                handler.on_delete(deleted);
                handler.on_add(added);
            }
            Pending::Nothing => {}
        }
    }
}

type AddFn<K> = Box<dyn Fn(Arc<K>, Hints) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(Arc<K>, Arc<K>, Hints) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(Deleted<K>) + Send + Sync>;

/// One of the framework's own handlers, made of closures that also get the [`Hints`]; methods
/// without a closure do nothing.
pub(crate) struct ChangeFns<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

/// Starts one of the framework's own handlers: `change_fns().on_add(..).on_update(..)`.
pub(crate) fn change_fns<K>() -> ChangeFns<K> {
    ChangeFns {
        add: None,
        update: None,
        delete: None,
    }
}

impl<K> ChangeFns<K> {
    /// Called with each new object.
    #[must_use]
    pub(crate) fn on_add(mut self, f: impl Fn(Arc<K>, Hints) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Called with the old and the new state of each changed object; a resync hands the cached
    /// object as both.
    #[must_use]
    pub(crate) fn on_update(
        mut self,
        f: impl Fn(Arc<K>, Arc<K>, Hints) + Send + Sync + 'static,
    ) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Called with each deleted object.
    #[must_use]
    pub(crate) fn on_delete(mut self, f: impl Fn(Deleted<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }

    fn add(&self, obj: Arc<K>, hints: Hints) {
        if let Some(f) = &self.add {
            f(obj, hints);
        }
    }

    fn delete(&self, deleted: Deleted<K>) {
        if let Some(f) = &self.delete {
            f(deleted);
        }
    }
}

impl<K: Send + Sync + 'static> Sink<K> for ChangeFns<K> {
    fn deliver(&self, popped: Popped<K>) {
        let hints = Hints {
            key: popped.key,
            coalesced: popped.coalesced,
            listed: popped.listed,
        };
        match popped.change {
            Pending::Added(obj) => self.add(obj, hints),
            Pending::Updated { old, new } => {
                if let Some(f) = &self.update {
                    f(old, new, hints);
                }
            }
            Pending::Deleted(deleted) => self.delete(deleted),
            Pending::Replaced { deleted, added } => {
                self.delete(deleted);
                self.add(added, hints);
            }
            Pending::Nothing => {}
        }
    }
}
