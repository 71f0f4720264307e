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
    /// A transform was added after the informer started, when objects were already cached
    /// without it.
    #[error("transforms must be added before the informer starts")]
    Started,
    /// The factory's informer for this resource, namespace and selectors exists already with
    /// other settings; one informer cannot honour two configs.
    #[error("the informer of {resource} exists already with a different config")]
    ConfigConflict {
        /// The informer's resource: URL path and selectors.
        resource: String,
    },
    /// A selector of a [`CacheScope`](super::CacheScope) does not parse.
    #[error("invalid {which} selector {selector:?} for {kind}")]
    InvalidSelector {
        /// `label` or `field`.
        which: &'static str,
        /// The kind it selects, as `Kind.group` (`Kind` for the core group).
        kind: String,
        /// The selector.
        selector: String,
        /// Why it does not parse.
        #[source]
        source: super::selector::SelectorError,
    },
    /// A namespace of a [`CacheScope`](super::CacheScope) is not a valid namespace name.
    #[error(
        "{namespace:?} is not a valid namespace name (lower-case letters, digits and '-', at most 63)"
    )]
    InvalidNamespace {
        /// The name.
        namespace: String,
    },
}

/// The result of informer operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
