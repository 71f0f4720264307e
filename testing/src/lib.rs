//! Tests operators: a local control plane, a fake API server, waits, endpoint probes, Leases.
//!
//! It names nothing of kubeward; `kubeward::testing` re-exports it with kubeward's own helpers.
//!
//! ```no_run
//! # #[allow(dead_code)]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::Api;
//! use kubeward_testing::ControlPlane;
//!
//! let cp = ControlPlane::start().await?;
//! let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), "default");
//! assert!(configmaps.list(&Default::default()).await?.items.is_empty());
//! # Ok(()) }
//! ```

mod binaries;
mod control_plane;
mod events;
mod existing;
pub mod fake;
mod garbage;
mod http;
mod lease;
mod process;
mod proxy;
mod resources;
mod scratch;
pub mod sim;
mod terminate;
mod tls;
mod wait;

pub use binaries::Binaries;
pub use control_plane::ControlPlane;
pub use events::events_about;
pub use existing::{USE_EXISTING_CLUSTER, skip_on_existing_cluster, use_existing_cluster};
pub use fake::FakeApiServer;
pub use garbage::GarbageCollector;
pub use http::{free_addr, get, scrape};
pub use lease::lease_holder;
pub use proxy::TcpProxy;
pub use resources::{cpu_time, resident_bytes};
pub use terminate::{signal, terminate};
pub use tls::presents;
pub use wait::{install_crd, install_crd_object, wait_for};

/// Errors from starting or talking to the local control plane.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A required program is not installed.
    #[error("{program} not found (looked in {searched}); install it with `{install}`")]
    MissingBinary {
        /// The program's name.
        program: String,
        /// Where it was looked for.
        searched: String,
        /// The command that installs it.
        install: &'static str,
    },
    /// A file or process operation failed.
    #[error("{action}")]
    Io {
        /// What was being done.
        action: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A component did not become ready in time.
    #[error("{component} was not ready after {seconds} s; last lines of its log:\n{log_tail}")]
    NotReady {
        /// etcd or kube-apiserver.
        component: &'static str,
        /// How long we waited.
        seconds: u64,
        /// The end of the component's log.
        log_tail: String,
    },
    /// A condition did not hold in time.
    #[error("timed out after {timeout:?} waiting for {what}")]
    Timeout {
        /// What was expected.
        what: String,
        /// How long we waited.
        timeout: std::time::Duration,
    },
    /// An API call failed.
    #[error("{action}")]
    Api {
        /// What was being done.
        action: String,
        /// The API error.
        #[source]
        source: Box<kube::Error>,
    },
    /// An endpoint answered with a status other than the one expected.
    #[error("{request} answered {status}: {body}")]
    Status {
        /// The request, e.g. `GET /metrics from 127.0.0.1:8080`.
        request: String,
        /// The status code.
        status: u16,
        /// The body of the answer.
        body: String,
    },
    /// Building a client configuration failed.
    #[error("building a client for the control plane")]
    Client(#[source] Box<kube::Error>),
    /// Only a local control plane can do this, and the tests run on an existing cluster
    /// (`KUBEWARD_USE_EXISTING_CLUSTER`).
    #[error("{action} needs a local control plane; the tests run on an existing cluster")]
    ExistingCluster {
        /// What was asked.
        action: &'static str,
    },
}

/// The result of control-plane operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io_error(action: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let action = action.into();
    move |source| Error::Io { action, source }
}
