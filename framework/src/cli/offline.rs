//! The client of a manager that only prints or writes its manifests: every request fails.

use std::task::{Context, Poll};

use http::{Request, Response};
use kube::Client;

/// A client for a manager that only prints manifests: it never connects, and every request
/// fails saying why.
pub(super) fn offline_client() -> Client {
    Client::new(Offline, "default")
}

/// The service behind [`offline_client`].
#[derive(Clone, Copy, Debug)]
struct Offline;

/// The error of every request through [`offline_client`].
#[derive(Debug, thiserror::Error)]
#[error("no cluster: the `crd` and `manifests` subcommands run without one")]
struct NoCluster;

impl tower_service::Service<Request<kube::client::Body>> for Offline {
    type Response = Response<kube::client::Body>;
    type Error = NoCluster;
    type Future = std::future::Ready<Result<Self::Response, NoCluster>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), NoCluster>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<kube::client::Body>) -> Self::Future {
        std::future::ready(Err(NoCluster))
    }
}
