//! Says where an operator serves its probes and metrics, and serves them as a runnable.

use std::net::SocketAddr;
#[cfg(feature = "tls")]
use std::path::PathBuf;

use futures::future::BoxFuture;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::answer::{Answers, serve};
use crate::manager::{BoxError, Error, IntoRunnable, Manager, Result, Runnable};

/// Where an endpoint listens: off, or an address (`0.0.0.0:8080`; port 0 picks a free port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindAddress {
    /// Not served.
    Off,
    /// Served on this address.
    On(SocketAddr),
}

/// Where `/metrics` and the health probes (`/healthz`, `/readyz`) are served; add it to a
/// [`Manager`] to serve them (`manager.add(Endpoints::new().metrics(addr))?`).
///
/// Both on one address share one listener; with [secure metrics](Self::secure_metrics),
/// `/metrics` is served over HTTPS on its own address and the probes stay plain HTTP.
#[derive(Clone, Debug)]
#[must_use]
pub struct Endpoints {
    metrics: BindAddress,
    probes: BindAddress,
    /// Whether `/metrics` is served over HTTPS, and the folder of its certificate, if any.
    #[cfg(feature = "tls")]
    secure: bool,
    #[cfg(feature = "tls")]
    cert_dir: Option<PathBuf>,
}

impl Default for Endpoints {
    fn default() -> Self {
        Self::new()
    }
}

impl Endpoints {
    /// Nothing served yet.
    pub fn new() -> Self {
        Self {
            metrics: BindAddress::Off,
            probes: BindAddress::Off,
            #[cfg(feature = "tls")]
            secure: false,
            #[cfg(feature = "tls")]
            cert_dir: None,
        }
    }

    /// Serves `/metrics` (the manager's [registry](Manager::registry)) at `address`.
    pub fn metrics(mut self, address: BindAddress) -> Self {
        self.metrics = address;
        self
    }

    /// Serves `/healthz` and `/readyz` (the manager's checks) at `address`.
    pub fn health_probes(mut self, address: BindAddress) -> Self {
        self.probes = address;
        self
    }

    /// Serves `/metrics` over HTTPS, only to callers whose bearer token may `get` `/metrics`
    /// (checked with `TokenReview` and `SubjectAccessReview`), with `tls.crt` and `tls.key`
    /// of `cert_dir` (re-read when they change) or, without one, a self-signed certificate
    /// made at start. HTTP/2 as the manager's
    /// [`Config::enable_http2`](crate::manager::Config::enable_http2) says.
    #[cfg(feature = "tls")]
    pub fn secure_metrics(mut self, cert_dir: Option<PathBuf>) -> Self {
        self.secure = true;
        self.cert_dir = cert_dir;
        self
    }

    /// Whether `/metrics` is served over HTTPS.
    #[cfg_attr(not(feature = "tls"), expect(clippy::unused_self, reason = "no HTTPS"))]
    fn is_secure(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.secure && self.metrics != BindAddress::Off;
        #[cfg(not(feature = "tls"))]
        false
    }

    /// The listeners, bound now, and what each answers.
    fn bind(&self, manager: &Manager) -> Result<Vec<Listener>> {
        let registry = Some(manager.registry().clone());
        let probes = Some(manager.probes());
        let reconciles = manager.reconciles().clone();
        // `/debug/reconciles/` goes wherever `/metrics` goes, behind the same guard.
        let with_metrics = |answers: Answers| Answers {
            reconciles: Some(reconciles.clone()),
            ..answers
        };
        match (self.metrics, self.probes) {
            (BindAddress::On(m), BindAddress::On(p)) if m == p => {
                if self.is_secure() {
                    return Err(Error::InvalidFlags(
                        "secure metrics need an address apart from the plain-HTTP health probes"
                            .into(),
                    ));
                }
                let listener = bind("metrics and health probe", m)?;
                Ok(vec![Listener::plain(
                    listener,
                    with_metrics(Answers::new(probes, registry)),
                )])
            }
            (metrics, health) => {
                let mut listeners = Vec::new();
                if let BindAddress::On(addr) = metrics {
                    let listener = bind("metrics", addr)?;
                    let answers = with_metrics(Answers::new(None, registry));
                    listeners.push(self.metrics_listener(manager, listener, answers)?);
                }
                if let BindAddress::On(addr) = health {
                    let listener = bind("health probe", addr)?;
                    listeners.push(Listener::plain(listener, Answers::new(probes, None)));
                }
                Ok(listeners)
            }
        }
    }

    /// `/metrics` on `listener`: plain, or guarded over HTTPS.
    #[cfg_attr(
        not(feature = "tls"),
        expect(
            clippy::unnecessary_wraps,
            clippy::unused_self,
            unused_variables,
            reason = "no HTTPS"
        )
    )]
    fn metrics_listener(
        &self,
        manager: &Manager,
        listener: std::net::TcpListener,
        answers: Answers,
    ) -> Result<Listener> {
        #[cfg(feature = "tls")]
        if self.secure {
            let certificate = super::secure::Certificate::load(self.cert_dir.as_deref())
                .map_err(Error::MetricsCertificate)?;
            let guard = crate::metrics::auth::Guard::new(manager.client(), "/metrics");
            return Ok(Listener {
                socket: listener,
                answers: Answers {
                    guard: Some(guard),
                    ..answers
                },
                secure: Some(Secure {
                    certificate,
                    limits: super::secure::limits(manager.config()),
                    closes: manager.metrics().webhook().closes("metrics"),
                }),
            });
        }
        Ok(Listener::plain(listener, answers))
    }
}

/// One bound address and what it answers.
struct Listener {
    socket: std::net::TcpListener,
    answers: Answers,
    #[cfg(feature = "tls")]
    secure: Option<Secure>,
}

/// How a listener serves HTTPS.
#[cfg(feature = "tls")]
struct Secure {
    certificate: super::secure::Certificate,
    limits: crate::tls::Limits,
    closes: crate::tls::Closes,
}

impl Listener {
    fn plain(socket: std::net::TcpListener, answers: Answers) -> Self {
        Self {
            socket,
            answers,
            #[cfg(feature = "tls")]
            secure: None,
        }
    }

    /// Serves until `stop` is cancelled.
    async fn serve(self, stop: CancellationToken) -> std::io::Result<()> {
        self.socket.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(self.socket)?;
        let https = self.answers.is_guarded();
        if let Ok(addr) = listener.local_addr() {
            tracing::info!(%addr, metrics = self.answers.metrics.is_some(), probes = self.answers.probes.is_some(), https, "serving");
        }
        #[cfg(feature = "tls")]
        if let Some(secure) = self.secure {
            let limits = (secure.limits, secure.closes);
            super::secure::serve(listener, self.answers, secure.certificate, limits, stop).await;
            return Ok(());
        }
        serve(listener, self.answers, stop).await;
        Ok(())
    }
}

/// Binds `addr` now, so that a taken port is the caller's error, not a failed run.
fn bind(what: &'static str, addr: SocketAddr) -> Result<std::net::TcpListener> {
    std::net::TcpListener::bind(addr).map_err(|source| Error::Bind { what, addr, source })
}

impl IntoRunnable for Endpoints {
    /// Binds the addresses.
    ///
    /// # Errors
    /// [`Error::Bind`] for an address that cannot be bound, [`Error::InvalidFlags`] for secure
    /// metrics on the probes' address, [`Error::MetricsCertificate`] for a certificate that
    /// does not load.
    fn into_runnable(self, manager: &Manager) -> Result<Box<dyn Runnable>> {
        Ok(Box::new(Serving {
            listeners: self.bind(manager)?,
        }))
    }
}

/// The endpoints' runnable: every replica serves them, from start until the others stopped.
struct Serving {
    listeners: Vec<Listener>,
}

impl Runnable for Serving {
    fn name(&self) -> String {
        "endpoints".to_owned()
    }

    fn needs_leader_election(&self) -> bool {
        false
    }

    fn serves(&self) -> bool {
        true
    }

    fn run(
        self: Box<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        Box::pin(async move {
            let mut servers = JoinSet::new();
            for listener in self.listeners {
                servers.spawn(listener.serve(shutdown.clone()));
            }
            while let Some(served) = servers.join_next().await {
                if let Ok(Err(e)) = served {
                    return Err(e.into());
                }
            }
            Ok(())
        })
    }
}
