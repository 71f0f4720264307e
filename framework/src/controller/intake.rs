//! Feeds a controller's keys into the work queue of its current term, or nowhere between terms.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::RwLock;

use super::why::{Pending, Trigger};
use crate::cache::ObjectKey;
use crate::queue::{AddOptions, WorkQueue};

/// Where a controller's triggers and sources put keys: the queue of the term that runs now.
///
/// Between terms (a replica that does not lead, or before the first start) there is no queue
/// and keys are dropped: a new term queues every cached object anyway.
#[derive(Clone, Default)]
pub(crate) struct Intake {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    current: RwLock<Option<(u64, WorkQueue<ObjectKey>)>>,
    terms: AtomicU64,
    /// Whether a key came while no term was open, since the last term opened.
    dropped: AtomicBool,
    /// The triggers of the keys in the current term's queue.
    pending: Arc<Pending>,
}

/// The open term of an [`Intake`]; dropping it (also when its task is aborted) closes the intake
/// and shuts its queue down.
pub(crate) struct Opened {
    intake: Intake,
    term: u64,
    queue: WorkQueue<ObjectKey>,
    missed: bool,
}

impl Intake {
    /// Adds `key`, triggered by `trigger`, to the current term's queue, if there is one.
    pub(crate) fn add(&self, key: ObjectKey, trigger: Trigger) {
        self.add_with(key, AddOptions::new(), trigger);
    }

    /// Adds `key` with `options`, triggered by `trigger`, to the current term's queue, if there
    /// is one. The trigger is noted before the key is queued (see [`Pending`]).
    pub(crate) fn add_with(&self, key: ObjectKey, options: AddOptions, trigger: Trigger) {
        match &*self.inner.current.read() {
            Some((_, queue)) => {
                self.inner.pending.push(&key, trigger);
                queue.add_with(key, options);
            }
            None => self.inner.dropped.store(true, Ordering::Relaxed),
        }
    }

    /// The triggers of the keys in the current term's queue.
    pub(crate) fn pending(&self) -> &Arc<Pending> {
        &self.inner.pending
    }

    /// Whether a term is open.
    #[cfg(test)]
    fn is_open(&self) -> bool {
        self.inner.current.read().is_some()
    }

    /// Makes `queue` the one keys go to until the returned guard is dropped.
    pub(crate) fn open(&self, queue: WorkQueue<ObjectKey>) -> Opened {
        let term = self.inner.terms.fetch_add(1, Ordering::Relaxed);
        // A new term's queue starts empty, and so do its triggers.
        self.inner.pending.clear();
        let previous = self.inner.current.write().replace((term, queue.clone()));
        if let Some((_, previous)) = previous {
            // Only one term runs at a time; a leftover would be a queue nobody works on.
            previous.shutdown();
        }
        let missed = self.inner.dropped.swap(false, Ordering::Relaxed) || term > 0;
        Opened {
            intake: self.clone(),
            term,
            queue,
            missed,
        }
    }
}

impl Opened {
    /// The term's queue.
    pub(crate) fn queue(&self) -> &WorkQueue<ObjectKey> {
        &self.queue
    }

    /// Whether keys may have been lost before this term: some came while no term was open, or
    /// an earlier term's queue was dropped with keys in it. Then every cached object must be
    /// queued; otherwise (the first term, open since before the first event) the handlers'
    /// own adds cover everything, and queuing all again could reconcile an object twice.
    pub(crate) fn missed(&self) -> bool {
        self.missed
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        let mut current = self.intake.inner.current.write();
        if current.as_ref().is_some_and(|(term, _)| *term == self.term) {
            *current = None;
        }
        drop(current);
        self.queue.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::why::Reason;

    fn resync() -> Trigger {
        Trigger::bare(Reason::Resync)
    }

    #[test]
    fn keys_reach_only_the_queue_of_an_open_term() {
        let intake = Intake::default();
        intake.add(ObjectKey::new(None, "before"), resync());
        let queue = WorkQueue::new();
        let opened = intake.open(queue.clone());
        assert!(opened.missed(), "a key came before the term");
        assert!(intake.is_open());
        intake.add(ObjectKey::new(None, "during"), resync());
        assert_eq!(queue.len(), 1, "only the key added while open");
        drop(opened);
        assert!(!intake.is_open());
        assert!(
            queue.is_shutting_down(),
            "a closed term's queue is shut down"
        );
        intake.add(ObjectKey::new(None, "after"), resync());
        let next = WorkQueue::new();
        let opened = intake.open(next.clone());
        assert!(next.is_empty(), "a new term starts with an empty queue");
        assert!(opened.missed(), "a later term always starts from the cache");
    }

    #[test]
    fn a_first_term_open_before_any_key_missed_nothing() {
        let intake = Intake::default();
        let opened = intake.open(WorkQueue::new());
        assert!(!opened.missed());
    }

    #[test]
    fn closing_an_old_term_late_leaves_the_new_one_open() {
        let intake = Intake::default();
        let old = intake.open(WorkQueue::new());
        let new_queue = WorkQueue::new();
        let new = intake.open(new_queue.clone());
        drop(old);
        intake.add(ObjectKey::new(None, "k"), resync());
        assert_eq!(new_queue.len(), 1);
        drop(new);
    }
}
