//! Runs an operator: one client, its controllers and tasks, the HTTP endpoints, and shutdown.
//!
//! ```no_run
//! # #[allow(dead_code)]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use kubeward::manager::{Config, Manager, RunsOn, runnable_fn};
//!
//! let manager = Manager::new(kube::Config::infer().await?, Config::default())?;
//! manager.add(runnable_fn("heartbeat", RunsOn::EveryReplica, |shutdown| async move {
//!     shutdown.cancelled().await;
//!     Ok(())
//! }))?;
//! manager.run().await?; // until SIGTERM or SIGINT
//! # Ok(())
//! # }
//! ```

mod config;
mod connection;
mod controllers;
mod namespaces;
mod parts;
mod plan;
mod probes;
pub(crate) mod recorded;
#[cfg(feature = "sharding")]
pub(crate) mod ring;
mod run;
mod runnable;
mod shutdown;

use std::sync::Arc;

use kube::Client;
use parking_lot::Mutex;
use prometheus::Registry;
use tokio_util::sync::CancellationToken;

pub use self::config::Config;
pub use self::connection::Connection;
use self::parts::Parts;
pub use self::probes::Check;
pub(crate) use self::probes::Probes;
use self::recorded::Recorded;
pub use self::runnable::{BoxError, IntoRunnable, Runnable, RunsOn, runnable_fn};
pub use self::shutdown::FORCED_EXIT_CODE;
use self::shutdown::cancel_on_signal;
pub use crate::leader::election::{LeaderElection, OnLeadershipLoss};

use crate::informer::Factory;
use crate::metrics::Metrics;
use crate::plan::dry_run;

/// Errors that stop a [`Manager`] from starting or end its run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A flag or configuration value is invalid.
    #[error("invalid flags: {0}")]
    InvalidFlags(String),
    /// A global logger was already installed.
    #[error("installing the logger")]
    Logging(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// No client configuration could be used: what was tried (`--kubeconfig`, `KUBECONFIG`,
    /// `~/.kube/config`, in-cluster), its problem and how to fix it, on one line.
    #[error("no usable Kubernetes client configuration: {0}")]
    NoClientConfig(String),
    /// A client could not be built for the configuration found (e.g. a TLS setting that does
    /// not load).
    #[error("building the Kubernetes client")]
    ClientConfig(#[source] Box<kube::Error>),
    /// A controller cannot be added: its name is taken, or its builder was given a value it
    /// refuses (see [`Controller::check`](crate::controller::Controller::check)).
    #[error("adding controller {name:?}: {reason}")]
    InvalidController {
        /// The controller's name.
        name: String,
        /// What is wrong, and how to put it right.
        reason: String,
    },
    /// A webhook, route or conversion was added at a path the webhook server serves already
    /// (feature `webhooks`).
    #[error("a webhook or route at {path} was added already; each path serves one")]
    DuplicatePath {
        /// The path.
        path: String,
    },
    /// An endpoint could not bind its address.
    #[error("binding the {what} endpoint to {addr}")]
    Bind {
        /// `metrics` or `health probe`.
        what: &'static str,
        /// The address.
        addr: std::net::SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Signal handlers could not be installed.
    #[error("installing signal handlers")]
    Signal(#[source] std::io::Error),
    /// A runnable (a controller or a task) failed.
    #[error("{name} failed")]
    Runnable {
        /// Its name.
        name: String,
        /// Its error.
        #[source]
        source: BoxError,
    },
    /// A runnable panicked.
    #[error("{name} panicked")]
    RunnablePanicked {
        /// Its name.
        name: String,
    },
    /// The leader-election configuration is invalid.
    #[error("setting up leader election")]
    LeaderElection(#[source] crate::leader::Error),
    /// This replica stopped leading and, with [`OnLeadershipLoss::Exit`] (or a leader-only
    /// runnable that cannot run again), ends its run so that it never reconciles without the Lease.
    #[error("lost the leader-election Lease {lease}")]
    LeadershipLost {
        /// The Lease's name.
        lease: String,
    },
    /// The `shards` command (`cli::Command`, feature `sharding`) could not read a ring's Leases
    /// or objects.
    #[error("reading the shards of ring {ring}")]
    RingView {
        /// The ring.
        ring: String,
        /// The cause.
        #[source]
        source: Box<kube::Error>,
    },
    /// A command-line subcommand (`cli::Command`) could not make, print or write the manifests
    /// (or the rings).
    #[error("{action}")]
    Manifests {
        /// What was being done, or what is missing.
        action: String,
        /// The cause, if another error.
        #[source]
        source: Option<BoxError>,
    },
    /// The serving certificate of secure metrics (`--metrics-cert-dir`) could not be loaded or
    /// made.
    #[cfg(feature = "tls")]
    #[error("loading the metrics serving certificate")]
    MetricsCertificate(#[source] crate::tls::Error),
    /// The cache scope names an invalid namespace or selector (see
    /// [`CacheScope::check`](crate::informer::CacheScope::check)).
    #[error("checking what the manager caches")]
    Cache(#[source] crate::informer::Error),
    /// Work was still running when the graceful shutdown timeout ran out.
    #[error("graceful shutdown timed out after {seconds} s; still running: {unfinished:?}")]
    ShutdownTimeout {
        /// The timeout.
        seconds: u64,
        /// The runnables that had not finished.
        unfinished: Vec<String>,
    },
}

/// The manager's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Registering the manager's families in a new registry: no family is there before them, and
/// their names are distinct (`metrics::REFERENCE` lists each once), so none can clash. Every
/// test that makes a Manager would fail if one did.
const CLASH: &str =
    "invariant: the manager's metric families have distinct names and the registry is new";

/// A new registry with the controller, queue, leader-election and client families in it.
fn new_registry() -> (Registry, Metrics) {
    let registry = Registry::new();
    let metrics = Metrics::new(&registry).expect(CLASH);
    (registry, metrics)
}

/// Owns the client, the metrics registry, the probes and every runnable of an operator, and runs
/// them until SIGTERM/SIGINT; see the [module docs](self).
pub struct Manager {
    client: Client,
    config: Config,
    registry: Registry,
    metrics: Metrics,
    factory: Arc<Factory>,
    probes: Arc<Probes>,
    runnables: Mutex<Vec<Box<dyn Runnable>>>,
    shutdown: CancellationToken,
    /// What the controllers added declare, for the manifests.
    recorded: Mutex<Recorded>,
    /// The parts added that later additions look up: a shard's membership, the webhooks.
    parts: Mutex<Parts>,
    /// The factories whose informers `/metrics` reports: the manager's, and a shard's.
    informer_factories: crate::metrics::Factories,
    /// The switch that makes the client's writes dry runs, and the controllers (see `plan`).
    plan: crate::plan::planner::Planned,
    /// The controllers' flight recorders, served at `/debug/reconciles`.
    reconciles: crate::controller::Reconciles,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let runnables: Vec<String> = self.runnables.lock().iter().map(|r| r.name()).collect();
        f.debug_struct("Manager")
            .field("config", &self.config)
            .field("probes", &self.probes)
            .field("runnables", &runnables)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// A manager for a cluster: a [`kube::Client`] you built (its requests are not counted), or
    /// a [`kube::Config`], from which the manager builds its client over HTTP/2 with connection
    /// health checks ([`Config::api_health_checks`]), counting its requests in
    /// `rest_client_requests_total` and `rest_client_request_duration_seconds`.
    ///
    /// # Errors
    /// [`Error::ClientConfig`] when no client can be built for a [`kube::Config`] (e.g. a TLS
    /// setting that does not load).
    pub fn new(connection: impl Into<Connection>, config: Config) -> Result<Self> {
        let (registry, metrics) = new_registry();
        let client = match connection.into() {
            Connection::Client(client) => client,
            Connection::Config(client_config) => {
                crate::client::build_client(*client_config, config.health_checks, &metrics)
                    .map_err(|e| Error::ClientConfig(Box::new(e)))?
            }
        };
        Ok(Self::assemble(client, config, registry, metrics))
    }

    /// Adds the informer and process families to `registry`, which holds only `metrics` yet.
    fn assemble(client: Client, config: Config, registry: Registry, metrics: Metrics) -> Self {
        // Every client the manager hands out can be switched to dry runs by a plan.
        let (client, planning) = dry_run::switchable(client);
        let factory = Arc::new(Factory::new(client.clone()).config(config.informers.clone()));
        let informer_factories = Arc::new(Mutex::new(vec![Arc::clone(&factory)]));
        crate::metrics::register_informer_factories(&registry, Arc::clone(&informer_factories))
            .expect(CLASH);
        crate::metrics::register_process(&registry).expect(CLASH);
        Self {
            factory,
            client,
            config,
            registry,
            metrics,
            probes: Arc::default(),
            runnables: Mutex::default(),
            shutdown: CancellationToken::new(),
            recorded: Mutex::default(),
            parts: Mutex::default(),
            informer_factories,
            plan: crate::plan::planner::Planned::new(planning),
            reconciles: crate::controller::Reconciles::default(),
        }
    }

    /// The Kubernetes client every controller of this manager shares.
    #[must_use]
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The manager's configuration.
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The Prometheus registry served at `/metrics`; register your own metrics in it.
    #[must_use]
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The metric families of controllers, work queues and leader election, registered in
    /// [`Self::registry`].
    #[must_use]
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The flight recorders of the controllers added.
    pub(crate) fn reconciles(&self) -> &crate::controller::Reconciles {
        &self.reconciles
    }

    /// The shared informer factory: every controller and handler of this manager that watches
    /// the same kind, namespace and selectors shares one informer (one list, one watch).
    #[must_use]
    pub fn factory(&self) -> &Arc<Factory> {
        &self.factory
    }

    /// Reports the informers of `factory`, one made besides [`Self::factory`], in `/metrics`
    /// too (the `kubeward_informer_*` families).
    pub fn report_informers(&self, factory: Arc<Factory>) {
        self.informer_factories.lock().push(factory);
    }

    /// Adds a controller or task, to be started by [`Self::run`]. A controller is bound to the
    /// shared informers now (see [`Controller::bind`](crate::controller::Controller::bind)), so
    /// its caches can fill before it runs.
    ///
    /// # Errors
    /// [`Error::InvalidController`] for a controller named like one added before (see
    /// [`Controller::name`](crate::controller::Controller::name); two controllers of one kind
    /// need a name each), or one its builder refused a value for; nothing is added then.
    pub fn add(&self, component: impl IntoRunnable) -> Result<()> {
        let runnable = component.into_runnable(self)?;
        self.runnables.lock().push(runnable);
        Ok(())
    }

    /// The health and readiness checks, which [`Endpoints`](crate::serving::Endpoints) answers.
    pub(crate) fn probes(&self) -> Arc<Probes> {
        Arc::clone(&self.probes)
    }

    /// Adds a liveness check to `/healthz`.
    pub fn add_health_check(&self, name: impl Into<String>, check: Check) {
        self.probes.add_health(name.into(), check);
    }

    /// Adds a readiness check to `/readyz` (which also fails once shutdown has begun).
    pub fn add_readiness_check(&self, name: impl Into<String>, check: Check) {
        self.probes.add_ready(name.into(), check);
    }

    /// The token that starts shutdown when cancelled; SIGTERM and SIGINT cancel it.
    #[must_use]
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }
}
