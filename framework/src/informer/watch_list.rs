//! How an informer gets the complete state it starts from: paginated lists or a streaming list.

/// How an informer gets its initial state, and the state again after `410 Gone`.
///
/// A streaming list (KEP-3157, `WatchList`) is one watch with `sendInitialEvents=true`: the
/// server sends every object as an `ADDED` event, then a bookmark annotated
/// `k8s.io/initial-events-end: "true"`, then live events, on the same connection. It spares the
/// server the paginated list (served from its watch cache instead of etcd) and the informer the
/// list pages it would hold while decoding them. Kubernetes serves it from 1.27 with the
/// `WatchList` feature gate, and by default from 1.32; older servers refuse it with
/// `422 Invalid` (`resourceVersionMatch is forbidden for watch`). Until the end bookmark comes,
/// the informer is not synced; once 10 s pass without a new object it logs a warning (and again
/// every 10 s) with how long it has waited and how many objects came, as client-go's reflector
/// does.
#[doc(alias = "InitialListStrategy")]
#[doc(alias = "UseWatchList")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[non_exhaustive]
pub enum WatchList {
    /// Paginated lists, then a watch from the list's resourceVersion (the default).
    #[default]
    Off,
    /// Streaming lists only; a server that refuses them is retried with backoff.
    On,
    /// A streaming list; if the server refuses it, paginated lists from then on for the
    /// informer's life, after one log line.
    Auto,
}
