//! One handler's delivery: either its coalescing buffer and the thread that drains it, or, for
//! the framework's own handlers that only feed a work queue, a call on the reflector's task.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube::Resource;
use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::EventHandler;
use super::buffer::{Buffer, Pending};
use crate::cache::Change;

/// A handler added to an informer; tells how far behind it is.
pub struct Registration<K> {
    listener: Arc<Listener<K>>,
}

pub(crate) struct Listener<K> {
    /// Handed each change on the reflector's task, without a buffer or a thread.
    inline: bool,
    buffer: Mutex<Buffer<K>>,
    ready: Condvar,
    stopped: AtomicBool,
    handler: Box<dyn EventHandler<K>>,
    resync: Option<Duration>,
}

impl<K> Registration<K> {
    pub(crate) fn new(listener: Arc<Listener<K>>) -> Self {
        Self { listener }
    }

    pub(crate) fn listener(&self) -> &Arc<Listener<K>> {
        &self.listener
    }
}

impl<K: Resource> Registration<K> {
    /// How many objects have a change this handler has not been handed yet (at most the number
    /// of cached objects plus those deleted since, however slow the handler is).
    #[must_use]
    pub fn pending(&self) -> usize {
        self.listener.buffer.lock().len()
    }
}

impl<K> fmt::Debug for Registration<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("resync", &self.listener.resync)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Send + Sync + 'static> Listener<K> {
    pub(crate) fn new(handler: Box<dyn EventHandler<K>>, resync: Option<Duration>) -> Self {
        Self {
            inline: false,
            buffer: Mutex::new(Buffer::new()),
            ready: Condvar::new(),
            stopped: AtomicBool::new(false),
            handler,
            resync,
        }
    }

    /// A listener whose handler is called on the task that stores each change, under the
    /// informer's handler lock. Only for handlers that never block and never call back into
    /// the informer: the controllers' own, which turn a change into keys for a work queue.
    /// Such a handler pays no thread, no wake-up and no buffer per change.
    pub(crate) fn inline(handler: Box<dyn EventHandler<K>>, resync: Option<Duration>) -> Self {
        Self {
            inline: true,
            ..Self::new(handler, resync)
        }
    }

    pub(crate) fn resync_period(&self) -> Option<Duration> {
        self.resync
    }

    /// Queues a change; never blocks on the handler.
    pub(crate) fn push(&self, change: Change<K>) {
        if self.inline {
            if !self.is_stopped() {
                self.deliver(Pending::from(change));
            }
            return;
        }
        self.buffer.lock().push(change);
        self.ready.notify_one();
    }

    /// Queues a resync of every object in `objects`.
    pub(crate) fn push_resync(&self, objects: &[Arc<K>]) {
        if self.inline {
            for obj in objects.iter().take_while(|_| !self.is_stopped()) {
                self.deliver(Pending::Updated {
                    old: Arc::clone(obj),
                    new: Arc::clone(obj),
                });
            }
            return;
        }
        let mut buffer = self.buffer.lock();
        for obj in objects {
            buffer.push_resync(obj);
        }
        drop(buffer);
        self.ready.notify_one();
    }

    /// Starts delivering on a thread of its own, so a slow handler holds only that thread.
    /// (Not tokio's blocking pool: a runtime being dropped waits for those, and a handler
    /// blocked forever would hang it.) The task ends when the thread does. An inline listener
    /// needs no thread: `None`.
    pub(crate) fn spawn(self: &Arc<Self>) -> Option<JoinHandle<()>> {
        if self.inline {
            return None;
        }
        let listener = Arc::clone(self);
        let (done_tx, done_rx) = oneshot::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("informer-handler".into())
            .spawn(move || {
                listener.deliver_until_stopped();
                drop(done_tx);
            });
        if let Err(err) = spawned {
            tracing::error!(error = %err, "cannot start a thread for an informer event handler");
        }
        Some(crate::task::spawn(async move {
            let _ = done_rx.await;
        }))
    }

    /// Makes the delivery task return after the change it is handling, if any.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _guard = self.buffer.lock();
        self.ready.notify_all();
    }

    /// Whether [`stop`](Self::stop) was called.
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    fn deliver_until_stopped(&self) {
        loop {
            let next = {
                let mut buffer = self.buffer.lock();
                loop {
                    if self.stopped.load(Ordering::SeqCst) {
                        return;
                    }
                    if let Some(next) = buffer.pop() {
                        break next;
                    }
                    self.ready.wait(&mut buffer);
                }
            };
            self.deliver(next);
        }
    }

    /// Hands one pending change to the handler; a panic is logged and the handler stays.
    fn deliver(&self, next: Pending<K>) {
        let handler = &self.handler;
        let delivered = catch_unwind(AssertUnwindSafe(|| match next {
            Pending::Added(obj) => handler.on_add(obj),
            Pending::Updated { old, new } => handler.on_update(old, new),
            Pending::Deleted(deleted) => handler.on_delete(deleted),
            Pending::Replaced { deleted, added } => {
                handler.on_delete(deleted);
                handler.on_add(added);
            }
            Pending::Nothing => {}
        }));
        if delivered.is_err() {
            tracing::error!("an informer event handler panicked; it keeps receiving changes");
        }
    }
}
