//! Feeds a controller's keys into the work queue of its current term, or nowhere between terms.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;

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
}

/// The open term of an [`Intake`]; dropping it (also when its task is aborted) closes the intake
/// and shuts its queue down.
pub(crate) struct Opened {
    intake: Intake,
    term: u64,
    queue: WorkQueue<ObjectKey>,
}

impl Intake {
    /// Adds `key` to the current term's queue, if there is one.
    pub(crate) fn add(&self, key: ObjectKey) {
        if let Some((_, queue)) = &*self.inner.current.read() {
            queue.add(key);
        }
    }

    /// Adds `key` with `options` to the current term's queue, if there is one.
    pub(crate) fn add_with(&self, key: ObjectKey, options: AddOptions) {
        if let Some((_, queue)) = &*self.inner.current.read() {
            queue.add_with(key, options);
        }
    }

    /// Whether a term is open.
    #[cfg(test)]
    fn is_open(&self) -> bool {
        self.inner.current.read().is_some()
    }

    /// Makes `queue` the one keys go to until the returned guard is dropped.
    pub(crate) fn open(&self, queue: WorkQueue<ObjectKey>) -> Opened {
        let term = self.inner.terms.fetch_add(1, Ordering::Relaxed);
        let previous = self.inner.current.write().replace((term, queue.clone()));
        if let Some((_, previous)) = previous {
            // Only one term runs at a time; a leftover would be a queue nobody works on.
            previous.shutdown();
        }
        Opened {
            intake: self.clone(),
            term,
            queue,
        }
    }
}

impl Opened {
    /// The term's queue.
    pub(crate) fn queue(&self) -> &WorkQueue<ObjectKey> {
        &self.queue
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

    #[test]
    fn keys_reach_only_the_queue_of_an_open_term() {
        let intake = Intake::default();
        intake.add(ObjectKey::new(None, "before"));
        let queue = WorkQueue::new();
        let opened = intake.open(queue.clone());
        assert!(intake.is_open());
        intake.add(ObjectKey::new(None, "during"));
        assert_eq!(queue.len(), 1, "only the key added while open");
        drop(opened);
        assert!(!intake.is_open());
        assert!(
            queue.is_shutting_down(),
            "a closed term's queue is shut down"
        );
        intake.add(ObjectKey::new(None, "after"));
        let next = WorkQueue::new();
        let _opened = intake.open(next.clone());
        assert!(next.is_empty(), "a new term starts with an empty queue");
    }

    #[test]
    fn closing_an_old_term_late_leaves_the_new_one_open() {
        let intake = Intake::default();
        let old = intake.open(WorkQueue::new());
        let new_queue = WorkQueue::new();
        let new = intake.open(new_queue.clone());
        drop(old);
        intake.add(ObjectKey::new(None, "k"));
        assert_eq!(new_queue.len(), 1);
        drop(new);
    }
}
