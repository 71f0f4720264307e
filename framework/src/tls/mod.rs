//! Serves HTTPS with rustls: certificates read from files and reloaded when they change, a
//! self-signed CA for development and tests, HTTP/1.1 and HTTP/2 on one listener.
//!
//! The webhook server and the secure `/metrics` endpoint use it. Certificates come from a
//! directory holding `tls.crt` and `tls.key` (the layout of a Kubernetes TLS Secret that
//! cert-manager fills and rotates); the server re-reads them while it runs, so each new TLS
//! handshake presents the newest certificate while open connections keep theirs and finish what
//! they were doing. For development, [`Authority`] makes a CA and the serving certificates it
//! signs, so that the CA can go into a webhook configuration's `caBundle`.
//!
//! Only the ring provider is used (the one kube's client uses), never OpenSSL or aws-lc.

mod authority;
#[cfg(feature = "webhooks")]
mod body;
mod closes;
mod config;
mod idle;
mod limits;
mod linger;
mod reloading;
#[cfg(feature = "webhooks")]
mod reply;
mod serve;

use std::path::PathBuf;

pub use self::authority::{Authority, CertificatePair};
#[cfg(feature = "webhooks")]
pub(crate) use self::body::{BodyError, DRAIN_LIMIT, read_limited};
pub(crate) use self::closes::Closes;
pub(crate) use self::config::server_config;
pub(crate) use self::limits::{Closed, Limits};
pub(crate) use self::linger::Lingering;
pub(crate) use self::reloading::ReloadingCertificate;
#[cfg(feature = "webhooks")]
pub(crate) use self::reply::Reply;
pub(crate) use self::serve::serve;

/// Errors making, reading or loading certificates.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A certificate or key could not be generated.
    #[error("generating a certificate")]
    Generate(#[source] rcgen::Error),
    /// A certificate or key file could not be read or written.
    #[error("{action} {path}")]
    File {
        /// `reading` or `writing`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A certificate or key does not parse, or the key does not belong to the certificate.
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// What was loaded (`tls.crt in /path`, `the key`).
        what: String,
        /// Why it is refused.
        reason: String,
    },
}

/// The TLS layer's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The certificate chain's file in a certificate directory (as in a `kubernetes.io/tls` Secret).
pub(crate) const TLS_CRT: &str = "tls.crt";
/// The private key's file in a certificate directory.
pub(crate) const TLS_KEY: &str = "tls.key";

#[cfg(test)]
#[path = "tests/client.rs"]
pub(crate) mod client;
