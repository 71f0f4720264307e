//! Configures a Manager: endpoints, concurrency, watch scope and shutdown.

use std::time::Duration;

use super::LeaderElection;
use crate::client::HealthChecks;
use crate::informer;
use crate::informer::CacheScope;
#[cfg(feature = "webhooks")]
use crate::webhook;

/// How a [`Manager`](super::Manager) runs; `cli::Flags::config` builds one from the command
/// line. Where it serves probes and metrics is the [`Endpoints`](crate::serving::Endpoints)
/// added to it.
#[derive(Clone, Debug)]
pub struct Config {
    #[cfg(feature = "tls")]
    pub(crate) enable_http2: bool,
    pub(crate) max_concurrent_reconciles: u16,
    pub(crate) graceful_shutdown_timeout: Duration,
    pub(crate) cache: CacheScope,
    pub(crate) leader_election: Option<LeaderElection>,
    pub(crate) informers: informer::Config,
    #[cfg(feature = "webhooks")]
    pub(crate) webhook: webhook::Config,
    pub(crate) health_checks: HealthChecks,
}

impl Default for Config {
    /// One reconcile at a time per controller, 30 s to finish in-flight work, all namespaces.
    fn default() -> Self {
        Self {
            #[cfg(feature = "tls")]
            enable_http2: false,
            max_concurrent_reconciles: 1,
            graceful_shutdown_timeout: Duration::from_secs(30),
            cache: CacheScope::default(),
            leader_election: None,
            informers: informer::Config::default(),
            #[cfg(feature = "webhooks")]
            webhook: webhook::Config::default(),
            health_checks: HealthChecks::default(),
        }
    }
}

impl Config {
    /// How the client the manager builds ([`Manager::new`](super::Manager::new) with a [`kube::Config`])
    /// notices a connection that died without a word: over HTTP/2, a connection that read nothing
    /// for `read_idle_timeout` is pinged and closed when no answer comes within `ping_timeout`,
    /// failing its watches and requests so that they reconnect. The default, client-go's, is
    /// 30 s and 15 s: a watch on a dead connection restarts within 45 s. A zero
    /// `read_idle_timeout` turns the pings off.
    #[must_use]
    pub fn api_health_checks(
        mut self,
        read_idle_timeout: Duration,
        ping_timeout: Duration,
    ) -> Self {
        self.health_checks = HealthChecks {
            read_idle_timeout,
            ping_timeout,
        };
        self
    }

    /// Let the HTTPS servers (secure metrics, webhooks) speak HTTP/2 as well as HTTP/1.1, as
    /// kubebuilder's `--enable-http2`. Off by default, as there: HTTP/1.1 alone keeps them out of
    /// reach of HTTP/2's stream-reset floods (CVE-2023-44487), and the API server and
    /// Prometheus call them over HTTP/1.1 as well. The client to the API server speaks HTTP/2
    /// either way (see [`Self::api_health_checks`]).
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn enable_http2(mut self, on: bool) -> Self {
        self.enable_http2 = on;
        self
    }

    /// Reconciles at once per controller, for controllers that do not set their own.
    ///
    /// With 0, [`Manager::add`](super::Manager::add) refuses every controller that sets none of
    /// its own: a controller without workers would never reconcile anything.
    #[must_use]
    pub fn max_concurrent_reconciles(mut self, n: u16) -> Self {
        self.max_concurrent_reconciles = n;
        self
    }

    /// How long in-flight work may take to finish once shutdown begins.
    #[must_use]
    pub fn graceful_shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.graceful_shutdown_timeout = timeout;
        self
    }

    /// What controllers cache: a set of namespaces (all by default) and label and field
    /// selectors per kind. [`Manager::run`](super::Manager::run) checks the selectors before it
    /// starts anything, and warns of a watched namespace that does not exist (yet).
    #[must_use]
    pub fn cache(mut self, scope: CacheScope) -> Self {
        self.cache = scope;
        self
    }

    /// Run controllers only while holding the Lease (`None`: always run them).
    #[must_use]
    pub fn leader_election(mut self, election: Option<LeaderElection>) -> Self {
        self.leader_election = election;
        self
    }

    /// How the manager's informers list, watch and cache, e.g.
    /// `informer::Config::default().compact(1024)` to keep every controller's cache compact.
    #[must_use]
    pub fn informers(mut self, config: informer::Config) -> Self {
        self.informers = config;
        self
    }

    /// How the webhook server serves and is reached (it runs only when webhooks or routes were
    /// added, or for a shard whose server has a certificate).
    #[cfg(feature = "webhooks")]
    #[must_use]
    pub fn webhook(mut self, config: webhook::Config) -> Self {
        self.webhook = config;
        self
    }

    /// What controllers cache.
    pub(crate) fn cache_scope(&self) -> &CacheScope {
        &self.cache
    }

    /// The workers of a controller that sets none; `None` for zero, which no controller can run
    /// with.
    #[must_use]
    pub(crate) fn default_concurrency(&self) -> Option<std::num::NonZeroU16> {
        std::num::NonZeroU16::new(self.max_concurrent_reconciles)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::manager::Manager;

    #[tokio::test]
    async fn controllers_of_a_manager_get_the_stores_its_informer_config_asks_for()
    -> anyhow::Result<()> {
        let client = kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse()?))?;
        let compact = informer::Config::default().compact(16);
        let manager = Manager::new(client.clone(), Config::default().informers(compact))?;
        assert!(
            manager
                .factory()
                .informer(kube::Api::<ConfigMap>::all(client.clone()))
                .store()
                .is_compact()
        );
        let default = Manager::new(client.clone(), Config::default())?;
        assert!(
            !default
                .factory()
                .informer(kube::Api::<ConfigMap>::all(client))
                .store()
                .is_compact()
        );
        Ok(())
    }
}
