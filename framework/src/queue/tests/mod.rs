//! Tests of the queue as a whole: behaviour (`api`), a model-based property test (`model`), a
//! multi-threaded stress test (`stress`), priority starvation (`starvation`) and the waking of
//! sleeping workers (`waking`).

mod api;
mod model;
mod starvation;
mod stress;
mod waking;

use futures::FutureExt;

use super::WorkQueue;

/// `get` polled once: `Some(Some(key))`, `Some(None)` (closed) or `None` (it would wait).
#[allow(
    clippy::option_option,
    reason = "`now_or_never` over `get`: the outer None is \"would wait\""
)]
fn try_get<T: std::hash::Hash + Eq + Clone + Send + 'static>(
    queue: &WorkQueue<T>,
) -> Option<Option<T>> {
    queue.get().now_or_never()
}
