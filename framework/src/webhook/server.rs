//! Runs the HTTPS webhook server: binds, loads or makes its certificate, serves the routes.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::Request;
use hyper::body::Incoming;
use hyper::service::service_fn;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::router::{BODY_LIMIT, Router};
use super::{Config, Error, Route};
use crate::metrics::WebhookMetrics;
use crate::tls::{self, Authority, Closes, ReloadingCertificate};

/// A webhook server bound to its port, with its certificate.
#[derive(Debug)]
pub(crate) struct Server {
    listener: TcpListener,
    certificate: Arc<ReloadingCertificate>,
    /// The CA of a self-signed certificate, PEM.
    generated_ca: Option<String>,
    router: Router,
    reload_period: Option<Duration>,
    limits: tls::Limits,
}

impl Server {
    /// Binds `config`'s port and loads its certificate directory, or, when self-signed, makes a
    /// CA and a certificate for `hosts`.
    ///
    /// # Errors
    /// [`Error::Bind`], or [`Error::Certificate`] when the certificate cannot be loaded or made.
    pub(crate) async fn bind(
        config: &Config,
        hosts: &[String],
        routes: &[Route],
    ) -> Result<Self, Error> {
        let addr = SocketAddr::from(([0, 0, 0, 0], config.port));
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let (certificate, generated_ca, reload_period) = if config.self_signed {
            let ca = Authority::generate("kubeward webhook CA").map_err(Error::Certificate)?;
            let pair = ca.issue(hosts).map_err(Error::Certificate)?;
            let certificate = ReloadingCertificate::fixed(&pair).map_err(Error::Certificate)?;
            (certificate, Some(ca.certificate_pem().to_owned()), None)
        } else {
            let certificate =
                ReloadingCertificate::from_dir(&config.cert_dir).map_err(|source| {
                    Error::CertificateDir {
                        dir: config.cert_dir.clone(),
                        source,
                    }
                })?;
            (certificate, None, Some(config.reload_period))
        };
        Ok(Self {
            listener,
            certificate: Arc::new(certificate),
            generated_ca,
            router: Router::new(routes, BODY_LIMIT, config.limits.read_timeout),
            reload_period,
            limits: config.limits,
        })
    }

    /// The address it listens on.
    pub(crate) fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// The CA that signed a self-signed certificate, PEM.
    pub(crate) fn generated_ca(&self) -> Option<&str> {
        self.generated_ca.as_deref()
    }

    /// Serves until `stop` is cancelled, re-reading the certificate files meanwhile, then lets
    /// open requests finish; counts requests and the connections it closes early in `metrics`.
    pub(crate) async fn serve(self, metrics: Option<WebhookMetrics>, stop: CancellationToken) {
        if let Some(period) = self.reload_period {
            tokio::spawn(Arc::clone(&self.certificate).watch(period, stop.clone()));
        }
        let mut router = self.router;
        let closes = metrics
            .as_ref()
            .map_or_else(Closes::default, |m| m.closes("webhook"));
        if let Some(metrics) = metrics {
            router.instrument(metrics);
        }
        // One reference count per request, not a clone of each route table and metric family.
        let router = Arc::new(router);
        let service = service_fn(move |request: Request<Incoming>| {
            let router = Arc::clone(&router);
            async move { Ok::<_, Infallible>(router.answer(request).await) }
        });
        let config = tls::server_config(self.certificate, self.limits.http2);
        tls::serve(self.listener, config, service, self.limits, closes, stop).await;
    }
}

#[cfg(test)]
#[path = "tests/server.rs"]
mod tests;

#[cfg(test)]
#[path = "tests/slow_clients.rs"]
mod slow_clients;

#[cfg(test)]
#[path = "tests/too_large.rs"]
mod too_large;
