//! Configures the webhook server: port, certificates, and how the API server reaches it.

use std::path::PathBuf;
use std::time::Duration;

use crate::tls::Limits;

/// controller-runtime's certificate directory, where a mounted `kubernetes.io/tls` Secret goes.
pub const DEFAULT_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
/// controller-runtime's webhook port.
pub const DEFAULT_PORT: u16 = 9443;

/// How the webhook server of a [`Manager`](crate::manager::Manager) serves; the `--webhook-*`
/// flags build one. The server runs only when webhooks or routes were added, or when a shard's
/// assignment webhooks can be served (see [`sharding`](crate::sharding)).
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) port: u16,
    pub(crate) cert_dir: PathBuf,
    pub(crate) self_signed: bool,
    pub(crate) hosts: Vec<String>,
    pub(crate) service: Option<String>,
    pub(crate) service_namespace: Option<String>,
    pub(crate) url: Option<String>,
    pub(crate) ca_bundle: Option<String>,
    pub(crate) configuration_name: Option<String>,
    pub(crate) reload_period: Duration,
    pub(crate) limits: Limits,
}

impl Default for Config {
    /// Port 9443, certificates from `/tmp/k8s-webhook-server/serving-certs` re-read every
    /// second, reached through the Service `PROGRAM-webhook` in the pod's namespace; a client
    /// gets 10 s for its TLS handshake, 32 s for a request's headers and 30 s for its body,
    /// an idle connection is closed after 90 s, and at most 512 are open at once.
    fn default() -> Self {
        Self {
            port: DEFAULT_PORT,
            cert_dir: PathBuf::from(DEFAULT_CERT_DIR),
            self_signed: false,
            hosts: Vec::new(),
            service: None,
            service_namespace: None,
            url: None,
            ca_bundle: None,
            configuration_name: None,
            reload_period: Duration::from_secs(1),
            limits: Limits::default(),
        }
    }
}

impl Config {
    /// The port on all interfaces (`0` turns the server off).
    #[must_use]
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The directory holding `tls.crt` and `tls.key`, re-read when they change.
    #[must_use]
    pub fn cert_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cert_dir = dir.into();
        self
    }

    /// Generate a CA and a serving certificate at start instead of reading the directory, and
    /// install this operator's webhook configurations (and the `caBundle` of CRDs it converts)
    /// with that CA: for development and tests, without cert-manager.
    #[must_use]
    pub fn self_signed(mut self, on: bool) -> Self {
        self.self_signed = on;
        self
    }

    /// The DNS names and IP addresses of a self-signed serving certificate (default: the
    /// Service's DNS names, `localhost` and `127.0.0.1`).
    #[must_use]
    pub fn hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// The Service in front of the webhook port that webhook configurations name (default
    /// `PROGRAM-webhook`), and its namespace (default the pod's).
    #[must_use]
    pub fn service(mut self, name: impl Into<String>, namespace: Option<String>) -> Self {
        self.service = Some(name.into());
        self.service_namespace = namespace;
        self
    }

    /// The base URL the API server calls instead of a Service (`https://127.0.0.1:9443`), for
    /// an operator running outside the cluster.
    #[must_use]
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// Install this operator's webhook configurations at start with `ca_pem` as their
    /// `caBundle`, the CA that signed the certificates in the directory (what cert-manager's CA
    /// injector does in a cluster).
    #[must_use]
    pub fn ca_bundle(mut self, ca_pem: impl Into<String>) -> Self {
        self.ca_bundle = Some(ca_pem.into());
        self
    }

    /// The prefix of the webhook configurations' names, `NAME-validating-webhook-configuration`
    /// and `NAME-mutating-webhook-configuration` (default this program's name).
    #[must_use]
    pub fn configuration_name(mut self, name: impl Into<String>) -> Self {
        self.configuration_name = Some(name.into());
        self
    }

    /// Whether the server can serve securely without the operator's own webhooks: its port is
    /// on and it has a certificate (self-signed, or `tls.crt` in the directory). The
    /// framework's own webhooks (a shard's assignment at creation) are served only then.
    #[cfg(feature = "sharding")]
    pub(crate) fn can_serve(&self) -> bool {
        self.port != 0 && (self.self_signed || self.cert_dir.join("tls.crt").is_file())
    }

    /// How often the certificate files are re-read (default 1 s).
    #[must_use]
    pub fn reload_period(mut self, period: Duration) -> Self {
        self.reload_period = period;
        self
    }

    /// How long a client may take to finish its TLS handshake (default 10 s).
    #[must_use]
    pub fn tls_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.limits.handshake_timeout = timeout;
        self
    }

    /// How long a new connection may go without sending a request, and a request's headers
    /// may take to arrive (default 32 s, controller-runtime's `ReadHeaderTimeout`).
    #[must_use]
    pub fn read_header_timeout(mut self, timeout: Duration) -> Self {
        self.limits.read_header_timeout = timeout;
        self
    }

    /// How long a request's body may take to arrive after its headers (default 30 s, the
    /// longest the API server waits for a webhook); a late one is answered 408.
    #[must_use]
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.limits.read_timeout = timeout;
        self
    }

    /// How long a connection may stay open with no request after its last answer (default
    /// 90 s, controller-runtime's `IdleTimeout` and the keep-alive of Go's HTTP clients).
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle_timeout = timeout;
        self
    }

    /// How many connections may be open at once (default 512); the next is closed as soon
    /// as it is accepted, and counted in `kubeward_serving_connections_closed_total`.
    #[must_use]
    pub fn max_connections(mut self, max: usize) -> Self {
        self.limits.max_connections = max;
        self
    }

    /// Whether clients may speak HTTP/2 (for tests; a manager's server takes
    /// [`Config::enable_http2`](crate::manager::Config::enable_http2)).
    #[cfg(test)]
    #[must_use]
    pub(crate) fn http2(mut self, on: bool) -> Self {
        self.limits.http2 = on;
        self
    }
}
