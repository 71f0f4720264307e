//! Says what became of a key when its processing is done.

/// What became of a key at [`WorkQueue::done`](super::WorkQueue::done).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Done {
    /// It left the queue: it was not added while being processed.
    Removed,
    /// It was added while being processed and is ready again.
    Ready,
    /// It was added with a delay (or rate limited) while being processed and waits for it.
    Delayed,
    /// It was not being processed (a stray `done`): nothing changed.
    NotProcessing,
}
