//! Serves the guarded `/metrics` (see `metrics::auth`) over HTTPS, with the certificate of a
//! folder (`--metrics-cert-dir`, re-read when it changes) or one made at start.

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http::Request;
use hyper::body::Incoming;
use hyper::service::service_fn;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::answer::Answers;
use crate::manager::Config;
use crate::tls::{self, Authority, ReloadingCertificate};

/// The limits of the HTTPS servers of `config`: the webhook server's (the `--webhook-*` flags),
/// and HTTP/2 as [`Config::enable_http2`] says.
pub(super) fn limits(config: &Config) -> tls::Limits {
    #[cfg(feature = "webhooks")]
    let limits = config.webhook.limits;
    #[cfg(not(feature = "webhooks"))]
    let limits = tls::Limits::default();
    tls::Limits {
        http2: config.enable_http2,
        ..limits
    }
}

/// How often the files of `--metrics-cert-dir` are checked for a new certificate.
const RELOAD_PERIOD: Duration = Duration::from_secs(10);

/// The serving certificate of secure metrics, and whether it comes from files to watch.
#[derive(Clone, Debug)]
pub(super) struct Certificate {
    current: Arc<ReloadingCertificate>,
    from_files: bool,
}

impl Certificate {
    /// `tls.crt` and `tls.key` of `dir`; with no `dir`, a certificate for `localhost`,
    /// `127.0.0.1` and this host's name, signed by a CA made for it and then forgotten (scrapers
    /// skip verification, or use `--metrics-cert-dir`).
    pub(super) fn load(dir: Option<&Path>) -> Result<Self, tls::Error> {
        let current = if let Some(dir) = dir {
            ReloadingCertificate::from_dir(dir)?
        } else {
            let authority = Authority::generate("kubeward metrics")?;
            ReloadingCertificate::fixed(&authority.issue(&self_signed_hosts())?)?
        };
        Ok(Self {
            current: Arc::new(current),
            from_files: dir.is_some(),
        })
    }
}

/// The names of a self-signed metrics certificate.
fn self_signed_hosts() -> Vec<String> {
    let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    hosts.extend(
        std::env::var("HOSTNAME")
            .ok()
            .filter(|h| !h.is_empty() && !hosts.contains(h)),
    );
    hosts
}

/// Answers requests for `answers` over TLS on `listener` until `stop` is cancelled, holding
/// clients to `limits` and counting the connections it closes early in `closes`.
pub(super) async fn serve(
    listener: TcpListener,
    answers: Answers,
    certificate: Certificate,
    (limits, closes): (tls::Limits, tls::Closes),
    stop: CancellationToken,
) {
    let watch = certificate
        .from_files
        .then(|| tokio::spawn(Arc::clone(&certificate.current).watch(RELOAD_PERIOD, stop.clone())));
    let service = service_fn(move |request: Request<Incoming>| {
        let answers = answers.clone();
        async move { Ok::<_, Infallible>(answers.answer(&request).await) }
    });
    tls::serve(
        listener,
        tls::server_config(certificate.current, limits.http2),
        service,
        limits,
        closes,
        stop,
    )
    .await;
    if let Some(watch) = watch {
        let _ = watch.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_folder_a_certificate_is_made_and_a_missing_folder_is_named() {
        let made = Certificate::load(None).expect("a self-signed certificate");
        assert!(!made.from_files);
        let missing = Path::new("/nonexistent/kubeward/metrics-certs");
        let err = Certificate::load(Some(missing)).unwrap_err();
        assert!(
            err.to_string()
                .contains("/nonexistent/kubeward/metrics-certs"),
            "{err}"
        );
    }
}
