//! Names the builder call that made a controller unable to run.

/// A value a [`Controller`](super::Controller) builder method was given that the controller
/// cannot run with. The builder keeps the first such mistake and goes on chaining;
/// [`Controller::check`](super::Controller::check) returns it, and
/// [`Controller::bind`](super::Controller::bind) refuses to bind the controller (as
/// controller-runtime's builder returns its mistakes from `Complete`).
///
/// Each message names the method and the value it was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Invalid {
    /// `concurrency(0)`: a controller without workers would never reconcile anything.
    #[error("Controller::concurrency(0): a controller needs at least one worker")]
    ZeroConcurrency,
    /// A finalizer the API server would refuse: it is a qualified name with a domain, like
    /// `example.com/cleanup`.
    #[error(
        "Controller::{method}: finalizer {finalizer:?} is not a qualified name like \
         `example.com/cleanup`: {reason}"
    )]
    Finalizer {
        /// The method given it: `with_finalizer` or `dynamic_with_finalizer`.
        method: &'static str,
        /// The finalizer as given.
        finalizer: String,
        /// Why the API server would refuse it.
        reason: &'static str,
    },
    /// A condition type that is not a qualified name, like `Available` or `example.com/Synced`.
    #[error("Controller::condition({type_:?}): a condition type is a qualified name: {reason}")]
    Condition {
        /// The condition type as given.
        type_: String,
        /// Why it is no qualified name.
        reason: &'static str,
    },
    /// A ring that cannot name a Lease and a label value (1-63 lower-case letters, digits, `-`
    /// and `.`, each dot-separated part starting and ending with a letter or digit).
    #[error(
        "Controller::ring({ring:?}): a ring names a Lease, a label value and label keys: {reason}"
    )]
    Ring {
        /// The ring as given.
        ring: String,
        /// Why it cannot name them.
        reason: &'static str,
    },
}
