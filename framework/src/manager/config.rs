//! Configures a Manager: endpoints, concurrency, watch scope and shutdown.

use std::time::Duration;

use crate::client::HealthChecks;
use crate::informer::CacheScope;
#[cfg(feature = "webhooks")]
use crate::webhook;
use crate::{informer, leader};

/// Leader election of a manager: the Lease's name and namespace, its timings, and what a
/// replica does when it loses the Lease.
#[derive(Clone, Debug)]
pub struct LeaderElection {
    pub(crate) lease: String,
    pub(crate) namespace: Option<String>,
    pub(crate) config: leader::Config,
    pub(crate) on_loss: OnLeadershipLoss,
}

/// What a manager does when it loses the Lease (`--leader-election-on-loss`).
///
/// Either way its controllers stop at once, so it never reconciles without the Lease. (The
/// variants' docs are the flag's `--help`, so they are plain text: see
/// [`Manager::run`](super::Manager::run), [`Error::LeadershipLost`](super::Error::LeadershipLost)
/// and [`Runnable::next_term`](super::Runnable::next_term).)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[non_exhaustive]
pub enum OnLeadershipLoss {
    /// `Manager::run` returns `Error::LeadershipLost` and the process exits, as in
    /// controller-runtime; the restarted process lists every cache again.
    #[default]
    Exit,
    /// The manager stops its leader-only runnables, drops their work queues, keeps its informers
    /// and caches, and campaigns again; when it leads again its controllers start afresh, with
    /// every cached object queued once. Every leader-only runnable must be able to run again
    /// (`Runnable::next_term`); otherwise losing the Lease exits.
    Standby,
}

impl LeaderElection {
    /// Elect on the Lease `lease`, in `namespace` (or, when `None`, the pod's namespace from
    /// `POD_NAMESPACE` or the service-account mount, else the client's default namespace).
    #[must_use]
    pub fn new(
        lease: impl Into<String>,
        namespace: Option<String>,
        config: leader::Config,
    ) -> Self {
        Self {
            lease: lease.into(),
            namespace,
            config,
            on_loss: OnLeadershipLoss::default(),
        }
    }

    /// What to do when the Lease is lost (default [`OnLeadershipLoss::Exit`]).
    #[must_use]
    pub fn on_loss(mut self, on_loss: OnLeadershipLoss) -> Self {
        self.on_loss = on_loss;
        self
    }
}

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
    /// The limits of the HTTPS servers: the webhook server's (the `--webhook-*` flags), and
    /// HTTP/2 as [`Config::enable_http2`] says.
    #[cfg(feature = "tls")]
    pub(crate) fn serving_limits(&self) -> crate::tls::Limits {
        #[cfg(feature = "webhooks")]
        let limits = self.webhook.limits;
        #[cfg(not(feature = "webhooks"))]
        let limits = crate::tls::Limits::default();
        crate::tls::Limits {
            http2: self.enable_http2,
            ..limits
        }
    }

    pub(crate) fn cache_scope(&self) -> &CacheScope {
        &self.cache
    }

    /// The default concurrency of controllers.
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
