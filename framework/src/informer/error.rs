//! Errors of informers.

/// What can go wrong when configuring or waiting for an informer; list and watch failures are
/// retried internally and only logged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The informer was shut down before it synced.
    #[error("the informer was shut down before its cache synced")]
    ShutDown,
    /// An index could not be added.
    #[error("cannot add the index")]
    Index(#[source] crate::cache::Error),
    /// `start` was called without a tokio runtime.
    #[error("informers must be started inside a tokio runtime")]
    NoRuntime,
}

/// The result of informer operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
