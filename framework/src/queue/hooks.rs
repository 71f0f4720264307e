//! What the queue reports, for metrics.
//!
//! The methods mirror controller-runtime's (and client-go's) `workqueue_*` metrics, so an
//! implementation maps each one onto one Prometheus series:
//!
//! | method | metric |
//! | --- | --- |
//! | [`depth`](QueueHooks::depth) | `workqueue_depth` (gauge, per priority) |
//! | [`add`](QueueHooks::add) | `workqueue_adds_total` (counter) |
//! | [`queue_duration`](QueueHooks::queue_duration) | `workqueue_queue_duration_seconds` (histogram) |
//! | [`work_duration`](QueueHooks::work_duration) | `workqueue_work_duration_seconds` (histogram) |
//! | [`unfinished_work`](QueueHooks::unfinished_work) | `workqueue_unfinished_work_seconds` (gauge) |
//! | [`longest_running_processor`](QueueHooks::longest_running_processor) | `workqueue_longest_running_processor_seconds` (gauge) |
//! | [`retry`](QueueHooks::retry) | `workqueue_retries_total` (counter) |
//!
//! Every method has an empty default; the queue's default hooks implement none.
//!
//! The queue calls these with its lock held, in the order the events happen: keep them cheap
//! (an atomic update) and never call back into the queue from them.

use std::fmt;
use std::time::Duration;

use super::Priority;

/// Receives the queue's measurements. All methods default to doing nothing.
pub trait QueueHooks: Send + Sync + fmt::Debug {
    /// The number of ready keys at `priority` changed to `depth` (delayed keys and keys being
    /// processed are not counted, as in client-go).
    fn depth(&self, priority: Priority, depth: usize) {
        let _ = (priority, depth);
    }

    /// A key was queued to be handed out: added while absent or being processed, or its delay
    /// ran out. Adds merged into a key that was already waiting are not counted.
    fn add(&self, priority: Priority) {
        let _ = priority;
    }

    /// A key was handed out by `get` after being ready for `waited`.
    fn queue_duration(&self, priority: Priority, waited: Duration) {
        let _ = (priority, waited);
    }

    /// A key was reported `done` after being processed for `worked`.
    fn work_duration(&self, worked: Duration) {
        let _ = worked;
    }

    /// The time spent so far on keys that are being processed, added up (reported by
    /// [`WorkQueue::update_unfinished_work`](super::WorkQueue::update_unfinished_work)).
    fn unfinished_work(&self, total: Duration) {
        let _ = total;
    }

    /// How long the longest-running key being processed has been at it (reported by
    /// [`WorkQueue::update_unfinished_work`](super::WorkQueue::update_unfinished_work)).
    fn longest_running_processor(&self, longest: Duration) {
        let _ = longest;
    }

    /// A key was added with [`add_rate_limited`](super::WorkQueue::add_rate_limited).
    fn retry(&self) {}

    /// Whether to measure durations ([`queue_duration`](Self::queue_duration),
    /// [`work_duration`](Self::work_duration), [`unfinished_work`](Self::unfinished_work),
    /// [`longest_running_processor`](Self::longest_running_processor)). Reading the clock is a
    /// good part of what `get` and `done` cost, so return false if you don't report them. Read
    /// once, when the queue is built.
    fn wants_durations(&self) -> bool {
        true
    }
}

/// Hooks that report nothing: the default.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NoopHooks;

impl QueueHooks for NoopHooks {
    fn wants_durations(&self) -> bool {
        false
    }
}
