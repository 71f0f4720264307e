//! What a reconcile asks for next: nothing until the object changes, or another pass later.

use std::time::Duration;

/// The result of a successful reconcile.
///
/// ```
/// use std::time::Duration;
/// use kubeward::controller::Action;
///
/// let poll = Action::requeue(Duration::from_secs(300)); // check again in five minutes
/// let idle = Action::await_change();                     // only when something changes
/// assert_eq!(poll.requeue_after(), Some(Duration::from_secs(300)));
/// assert_eq!(idle.requeue_after(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct Action {
    requeue_after: Option<Duration>,
}

impl Action {
    /// Reconcile the object again after `delay`, even if nothing changes. A zero delay asks for
    /// another pass now, spaced out by the rate limiter (controller-runtime's `Requeue: true`).
    pub const fn requeue(delay: Duration) -> Self {
        Self {
            requeue_after: Some(delay),
        }
    }

    /// Reconcile the object again only when it (or something it owns or watches) changes.
    pub const fn await_change() -> Self {
        Self {
            requeue_after: None,
        }
    }

    /// The delay before the next reconcile, if one was asked for.
    #[must_use]
    pub const fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after
    }
}

/// What to do after a failed reconcile; chosen by [`Reconciler::error_policy`](super::Reconciler::error_policy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum ErrorAction {
    /// Retry with the controller's rate limiter (per-key exponential backoff); the default.
    Retry,
    /// Retry after this delay.
    RetryAfter(Duration),
    /// Do not retry: the error cannot be fixed by trying again (controller-runtime's
    /// `TerminalError`). The object is reconciled again only when it changes.
    Terminal,
}
