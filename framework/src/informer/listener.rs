//! One handler of an informer: where its changes go, the signal that some are waiting, and
//! whether it was stopped. Its buffer lives in the fan-out, its delivery on a task of its own.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use super::buffer::Popped;
use super::sink::Sink;

pub(crate) struct Listener<K> {
    sink: Box<dyn Sink<K>>,
    /// Signalled when the handler's buffer gets its first change, and when it is stopped.
    ready: Notify,
    stopped: AtomicBool,
    resync: Option<Duration>,
}

impl<K> Listener<K> {
    pub(crate) fn resync_period(&self) -> Option<Duration> {
        self.resync
    }
}

impl<K: 'static> Listener<K> {
    pub(crate) fn new(sink: Box<dyn Sink<K>>, resync: Option<Duration>) -> Self {
        Self {
            sink,
            ready: Notify::new(),
            stopped: AtomicBool::new(false),
            resync,
        }
    }

    /// Tells the delivery task that changes wait (or that it was stopped). A signal sent while
    /// the task is busy is kept for its next wait.
    pub(crate) fn wake(&self) {
        self.ready.notify_one();
    }

    /// Waits for [`Self::wake`].
    pub(crate) async fn ready(&self) {
        self.ready.notified().await;
    }

    /// Makes the delivery task return after the change it is handling, if any.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.wake();
    }

    /// Whether [`stop`](Self::stop) was called.
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Hands one pending change to the handler; a panic is logged and the handler stays.
    pub(crate) fn deliver(&self, popped: Popped<K>) {
        let delivered = catch_unwind(AssertUnwindSafe(|| self.sink.deliver(popped)));
        if delivered.is_err() {
            tracing::error!("an informer event handler panicked; it keeps receiving changes");
        }
    }
}
