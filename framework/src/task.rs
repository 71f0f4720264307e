//! Spawns tasks as boxed futures, so that tokio's task machinery is compiled once per output type
//! rather than once per future type, in each operator, for each kind.

use std::future::Future;

use futures::future::BoxFuture;
use tokio::task::{JoinHandle, JoinSet};

/// `tokio::spawn` of `future`, boxed. For code generic over a kind: each `tokio::spawn` of its own
/// future type instantiates tokio's task harness (about 1,500 lines of LLVM IR) in the operator's
/// crate, once for every kind; this instantiates it for `BoxFuture<T>` only.
pub(crate) fn spawn<T: Send + 'static>(
    future: impl Future<Output = T> + Send + 'static,
) -> JoinHandle<T> {
    let future: BoxFuture<'static, T> = Box::pin(future);
    tokio::spawn(future)
}

/// [`JoinSet::spawn`] of `future`, boxed, as [`spawn`].
pub(crate) fn spawn_in<T: Send + 'static>(
    set: &mut JoinSet<T>,
    future: impl Future<Output = T> + Send + 'static,
) {
    let future: BoxFuture<'static, T> = Box::pin(future);
    set.spawn(future);
}
