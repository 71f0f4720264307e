//! The webhook server's command-line flags (`--webhook-*`), as controller-runtime names them.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::duration::parse_duration;
use crate::webhook;

/// How the webhook server serves and is reached, from `--webhook-*` flags; part of
/// [`Flags`](super::Flags).
#[derive(Clone, Debug, Args)]
#[non_exhaustive]
pub struct WebhookFlags {
    /// Port of the HTTPS webhook server (it runs only when the operator has webhooks, or runs as
    /// a shard and has a certificate: the shard's assignment webhooks); `0` turns it off.
    #[arg(long = "webhook-port", env = "KUBEWARD_WEBHOOK_PORT", default_value_t = webhook::DEFAULT_PORT)]
    pub port: u16,

    /// Directory holding the webhook server's `tls.crt` and `tls.key`, re-read when they change.
    #[arg(long = "webhook-cert-dir", env = "KUBEWARD_WEBHOOK_CERT_DIR", default_value = webhook::DEFAULT_CERT_DIR, value_name = "DIR")]
    pub cert_dir: PathBuf,

    /// Generate a CA and a serving certificate at start, and install the operator's webhook
    /// configurations (and its CRDs' conversion webhooks) with that CA: for development.
    #[arg(long = "webhook-self-signed", env = "KUBEWARD_WEBHOOK_SELF_SIGNED")]
    pub self_signed: bool,

    /// A DNS name or IP address of the self-signed serving certificate (repeat the flag or
    /// separate with commas); default the webhook Service's names, `localhost`, `127.0.0.1`.
    #[arg(
        long = "webhook-host",
        env = "KUBEWARD_WEBHOOK_HOST",
        value_delimiter = ',',
        value_name = "HOST"
    )]
    pub host: Vec<String>,

    /// Name of the Service in front of the webhook port, which webhook configurations name;
    /// default `PROGRAM-webhook` in the pod's namespace.
    #[arg(
        long = "webhook-service",
        env = "KUBEWARD_WEBHOOK_SERVICE",
        value_name = "NAME"
    )]
    pub service: Option<String>,

    /// Base URL the API server calls instead of the Service (`https://127.0.0.1:9443`), for an
    /// operator running outside the cluster with `--webhook-self-signed`.
    #[arg(long = "webhook-url", env = "KUBEWARD_WEBHOOK_URL", value_name = "URL")]
    pub url: Option<String>,

    /// How long a client of the webhook and secure metrics ports may take to finish its TLS
    /// handshake.
    #[arg(long = "webhook-tls-handshake-timeout", env = "KUBEWARD_WEBHOOK_TLS_HANDSHAKE_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub tls_handshake_timeout: Duration,

    /// How long a new connection to the webhook and secure metrics ports may go without a
    /// request, and a request's headers may take to arrive.
    #[arg(long = "webhook-read-header-timeout", env = "KUBEWARD_WEBHOOK_READ_HEADER_TIMEOUT", default_value = "32s", value_parser = parse_duration)]
    pub read_header_timeout: Duration,

    /// How long a webhook request's body may take to arrive after its headers (answered 408).
    #[arg(long = "webhook-read-timeout", env = "KUBEWARD_WEBHOOK_READ_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub read_timeout: Duration,

    /// How long a connection to the webhook and secure metrics ports may stay open with no
    /// request after its last answer.
    #[arg(long = "webhook-idle-timeout", env = "KUBEWARD_WEBHOOK_IDLE_TIMEOUT", default_value = "90s", value_parser = parse_duration)]
    pub idle_timeout: Duration,

    /// How many connections the webhook port, and the secure metrics port, each keep open at
    /// once; the next is closed on accept.
    #[arg(long = "webhook-max-connections", env = "KUBEWARD_WEBHOOK_MAX_CONNECTIONS", default_value_t = 512, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_connections: u16,
}

impl WebhookFlags {
    /// The webhook server's configuration these flags describe.
    pub(crate) fn config(&self) -> webhook::Config {
        let mut config = webhook::Config::default()
            .port(self.port)
            .cert_dir(&self.cert_dir)
            .self_signed(self.self_signed)
            .hosts(self.host.iter().filter(|h| !h.is_empty()).cloned())
            .tls_handshake_timeout(self.tls_handshake_timeout)
            .read_header_timeout(self.read_header_timeout)
            .read_timeout(self.read_timeout)
            .idle_timeout(self.idle_timeout)
            .max_connections(self.max_connections.into());
        if let Some(service) = &self.service {
            config = config.service(service, None);
        }
        if let Some(url) = &self.url {
            config = config.url(url);
        }
        config
    }
}
