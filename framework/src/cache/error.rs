//! Errors of the cache.

/// What can go wrong when querying or configuring a [`Store`](super::Store).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No index of this name was added.
    #[error("no index named {0:?}")]
    UnknownIndex(String),
    /// An index of this name already exists.
    #[error("an index named {0:?} already exists")]
    IndexExists(String),
}

/// The result of cache operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
