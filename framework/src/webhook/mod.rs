//! Serves admission webhooks (and other webhook routes, such as CRD conversion) over HTTPS.
//!
//! Implement [`Validator`] or [`Defaulter`] for a kind (a CRD or any built-in type), wrap it in
//! an [`Admission`] (or let [`Manager::add_validator`](crate::manager::Manager::add_validator)
//! do it), and the manager runs one HTTPS server on every replica, leader or not, at
//! `--webhook-port` (9443). Reviews are kube's [`AdmissionReview`](kube::core::admission::AdmissionReview);
//! a defaulter changes the object and the framework computes the JSON patch.
//!
//! Certificates come from `--webhook-cert-dir` (`tls.crt`, `tls.key`, re-read when cert-manager
//! rotates them: new handshakes get the new certificate, open connections finish on the old),
//! or, with `--webhook-self-signed`, from a CA made at start, which the manager then writes into
//! its own webhook configurations' `caBundle`.
//!
//! Bad input never stops the server: an undecodable review is refused with the reason (HTTP 200
//! and `allowed: false` when its uid can be read, else 400), a body that is not
//! `application/json` gets 415, one over 3 MiB gets 413, another method 405, another path 404.

mod admission;
mod config;
mod configurations;
mod defaulter;
mod endpoint;
mod install;
mod review;
mod route;
mod router;
mod server;
mod validator;
mod verdict;

use std::net::SocketAddr;

pub use self::admission::{Admission, FailurePolicy};
pub use self::config::{Config, DEFAULT_CERT_DIR, DEFAULT_PORT};
#[cfg(feature = "cli")]
pub(crate) use self::configurations::configurations;
pub use self::defaulter::Defaulter;
pub(crate) use self::endpoint::Endpoint;
pub(crate) use self::install::install;
pub use self::route::Route;
#[cfg(any(test, feature = "testing"))]
pub(crate) use self::router::Router;
pub(crate) use self::server::Server;
pub use self::validator::Validator;
pub use self::verdict::Verdict;

/// A kind whose objects webhooks admit: any Kubernetes resource type with a static type (a
/// CRD's kind, `ConfigMap`, ...) that serde reads and writes.
pub trait Admissible:
    kube::Resource<DynamicType = ()>
    + serde::Serialize
    + serde::de::DeserializeOwned
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<K> Admissible for K where
    K: kube::Resource<DynamicType = ()>
        + serde::Serialize
        + serde::de::DeserializeOwned
        + Clone
        + Send
        + Sync
        + 'static
{
}

/// Errors that stop the webhook server from starting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The webhook port could not be bound.
    #[error("binding the webhook server to {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The serving certificate could not be made.
    #[error("the webhook server's certificate")]
    Certificate(#[source] crate::tls::Error),
    /// The serving certificate could not be loaded from `--webhook-cert-dir`.
    #[error(
        "the webhook server's certificate in {dir}: put `tls.crt` and `tls.key` there (in a \
         cluster, cert-manager's Secret, as the chart mounts it), or run with \
         --webhook-self-signed (outside a cluster also --webhook-host 127.0.0.1 --webhook-url \
         https://127.0.0.1:PORT) to make one at start"
    )]
    CertificateDir {
        /// The folder.
        dir: std::path::PathBuf,
        /// The cause.
        #[source]
        source: crate::tls::Error,
    },
    /// The API server refused a webhook configuration or CRD the manager installs.
    #[error("installing {what}")]
    Install {
        /// The object.
        what: String,
        /// The cause.
        #[source]
        source: Box<kube::Error>,
    },
}
