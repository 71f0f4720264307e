//! Bounds what a client of an HTTPS server may hold: handshake, header and body time, idle time
//! between requests, the number of open connections, and whether it may speak HTTP/2.

use std::time::Duration;

/// The time and connection limits of an HTTPS server, with defaults a Go server operator
/// expects: controller-runtime's webhook server waits 32 s for a request's headers and keeps an
/// idle connection 90 s (the keep-alive of Go's and the API server's HTTP clients).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// How long a client may take to finish its TLS handshake.
    pub(crate) handshake_timeout: Duration,
    /// How long a new connection may go without a request, and how long a request's headers
    /// may take to arrive.
    pub(crate) read_header_timeout: Duration,
    /// How long a request's body may take to arrive once its headers have.
    pub(crate) read_timeout: Duration,
    /// How long a connection may stay open with no request in flight after its last answer.
    pub(crate) idle_timeout: Duration,
    /// How many connections may be open at once; the next is closed as soon as it is accepted.
    pub(crate) max_connections: usize,
    /// Whether a client may speak HTTP/2. Off by default, as kubebuilder's `--enable-http2`:
    /// HTTP/1.1 alone keeps the servers out of reach of HTTP/2's stream-reset floods
    /// (CVE-2023-44487), and the API server and Prometheus speak HTTP/1.1 as well.
    pub(crate) http2: bool,
}

/// Default TLS handshake timeout (Go's `http.Transport` waits 10 s for it on the client side).
pub(crate) const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default header read timeout: controller-runtime's `ReadHeaderTimeout`.
pub(crate) const DEFAULT_READ_HEADER_TIMEOUT: Duration = Duration::from_secs(32);
/// Default body read timeout: the longest timeout the API server allows a webhook call.
pub(crate) const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default idle timeout: controller-runtime's `IdleTimeout`.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Default connection limit: well under a container's usual 1,024 open files.
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 512;

impl Default for Limits {
    fn default() -> Self {
        Self {
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            read_header_timeout: DEFAULT_READ_HEADER_TIMEOUT,
            read_timeout: DEFAULT_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            http2: false,
        }
    }
}

/// Why the server closed a connection (or refused it), the `reason` label of
/// `kubeward_serving_connections_closed_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closed {
    /// Refused on accept: `max_connections` were already open.
    MaxConnections,
    /// The TLS handshake did not finish within `handshake_timeout`.
    HandshakeTimeout,
    /// No request (or not its whole header) within `read_header_timeout` of the handshake.
    ReadHeaderTimeout,
    /// A request's body did not arrive within `read_timeout`.
    ReadTimeout,
    /// No new request within `idle_timeout` of the last answer.
    IdleTimeout,
}

impl Closed {
    /// Every reason.
    pub(crate) const ALL: [Self; 5] = [
        Self::MaxConnections,
        Self::HandshakeTimeout,
        Self::ReadHeaderTimeout,
        Self::ReadTimeout,
        Self::IdleTimeout,
    ];

    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::MaxConnections => "max_connections",
            Self::HandshakeTimeout => "handshake_timeout",
            Self::ReadHeaderTimeout => "read_header_timeout",
            Self::ReadTimeout => "read_timeout",
            Self::IdleTimeout => "idle_timeout",
        }
    }
}
