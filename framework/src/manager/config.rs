//! Configures a Manager: endpoints, concurrency, watch scope and shutdown.

use std::time::Duration;

use super::BindAddress;

/// How a [`Manager`](super::Manager) runs; [`Flags::config`](super::Flags::config) builds one
/// from the command line.
#[derive(Clone, Debug)]
pub struct Config {
    pub(crate) metrics_bind_address: BindAddress,
    pub(crate) health_probe_bind_address: BindAddress,
    pub(crate) max_concurrent_reconciles: u16,
    pub(crate) graceful_shutdown_timeout: Duration,
    pub(crate) namespace: Option<String>,
}

impl Default for Config {
    /// Endpoints off (so tests and embedded managers bind nothing), one reconcile at a time per
    /// controller, 30 s to finish in-flight work, all namespaces.
    fn default() -> Self {
        Self {
            metrics_bind_address: BindAddress::Off,
            health_probe_bind_address: BindAddress::Off,
            max_concurrent_reconciles: 1,
            graceful_shutdown_timeout: Duration::from_secs(30),
            namespace: None,
        }
    }
}

impl Config {
    /// Where `/metrics` is served.
    #[must_use]
    pub fn metrics_bind_address(mut self, address: BindAddress) -> Self {
        self.metrics_bind_address = address;
        self
    }

    /// Where `/healthz` and `/readyz` are served (may equal the metrics address).
    #[must_use]
    pub fn health_probe_bind_address(mut self, address: BindAddress) -> Self {
        self.health_probe_bind_address = address;
        self
    }

    /// Reconciles at once per controller, for controllers that do not set their own.
    #[must_use]
    pub fn max_concurrent_reconciles(mut self, n: u16) -> Self {
        self.max_concurrent_reconciles = n.max(1);
        self
    }

    /// How long in-flight work may take to finish once shutdown begins.
    #[must_use]
    pub fn graceful_shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.graceful_shutdown_timeout = timeout;
        self
    }

    /// Watch only this namespace (`None`: all namespaces).
    #[must_use]
    pub fn namespace(mut self, namespace: Option<String>) -> Self {
        self.namespace = namespace;
        self
    }

    /// The namespace controllers watch, if limited to one.
    #[must_use]
    pub fn watch_namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The default concurrency of controllers.
    #[must_use]
    pub fn default_concurrency(&self) -> u16 {
        self.max_concurrent_reconciles
    }
}
