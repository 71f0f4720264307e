//! Builds the rustls server configuration: TLS 1.2 and 1.3, ALPN `http/1.1` (after `h2` if asked).

use std::sync::Arc;

use rustls::ServerConfig;

use super::ReloadingCertificate;
use super::reloading::provider;

/// A server configuration presenting `certificate`'s current certificate on each handshake,
/// offering HTTP/1.1, after HTTP/2 when `http2` is on (a client that names neither gets
/// HTTP/1.1; one that names only HTTP/2 when it is off fails its handshake).
pub(crate) fn server_config(
    certificate: Arc<ReloadingCertificate>,
    http2: bool,
) -> Arc<ServerConfig> {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("invariant: ring's default provider supports the default TLS versions")
        .with_no_client_auth()
        .with_cert_resolver(certificate);
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Arc::new(config)
}
