//! Adds admission webhooks and routes to a Manager and runs its webhook server as a runnable.

use std::collections::HashSet;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Service;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::{BoxError, Error, Manager, Result, Runnable};
use crate::conversion::Converter;
use crate::webhook::{self, Admissible, Admission, Defaulter, Endpoint, Route, Server, Validator};

/// What the webhook server serves, and every path taken.
#[derive(Default)]
pub(super) struct WebhookSet {
    pub(super) admissions: Vec<Admission>,
    pub(super) routes: Vec<Route>,
    /// The converters served at `/convert`, one per CRD.
    pub(super) converters: Vec<Converter>,
    paths: HashSet<String>,
}

impl WebhookSet {
    /// Reserves `path`.
    ///
    /// # Errors
    /// [`Error::DuplicatePath`] when a webhook or route has it already.
    pub(super) fn claim(&mut self, path: &str) -> Result<()> {
        if self.paths.insert(path.to_owned()) {
            return Ok(());
        }
        Err(Error::DuplicatePath {
            path: path.to_owned(),
        })
    }
}

impl Manager {
    /// Serves `webhook` on the webhook server (see [`webhook`]), which every
    /// replica runs, leader or not.
    ///
    /// # Errors
    /// [`Error::DuplicatePath`] if a webhook or route with the same path was added before.
    pub fn add_webhook(&self, webhook: Admission) -> Result<()> {
        let mut set = self.webhooks.lock();
        set.claim(webhook.path())?;
        set.admissions.push(webhook);
        Ok(())
    }

    /// Serves `validator` at `/validate-GROUP-VERSION-KIND` with the defaults of
    /// [`Admission::validator`]; for other settings, [`Self::add_webhook`].
    ///
    /// # Errors
    /// As [`Self::add_webhook`].
    pub fn add_validator<K: Admissible>(&self, validator: impl Validator<K>) -> Result<()> {
        self.add_webhook(Admission::validator(validator))
    }

    /// Serves `defaulter` at `/mutate-GROUP-VERSION-KIND` with the defaults of
    /// [`Admission::defaulter`]; for other settings, [`Self::add_webhook`].
    ///
    /// # Errors
    /// As [`Self::add_webhook`].
    pub fn add_defaulter<K: Admissible>(&self, defaulter: impl Defaulter<K>) -> Result<()> {
        self.add_webhook(Admission::defaulter(defaulter))
    }

    /// Serves `route` (e.g. a CRD's conversion webhook) on the webhook server.
    ///
    /// # Errors
    /// As [`Self::add_webhook`].
    pub fn add_route(&self, route: Route) -> Result<()> {
        let mut set = self.webhooks.lock();
        set.claim(route.path())?;
        set.routes.push(route);
        Ok(())
    }

    /// The admission webhooks added so far.
    pub(crate) fn webhooks(&self) -> Vec<Admission> {
        self.webhooks.lock().admissions.clone()
    }

    /// Where the API server reaches this operator's webhooks, as configured.
    pub(crate) fn webhook_endpoint(&self) -> Endpoint {
        let config = &self.config.webhook;
        match &config.url {
            Some(url) => Endpoint::Url(url.clone()),
            None => Endpoint::Service {
                name: config.service.clone().unwrap_or_else(|| {
                    format!("{}-webhook", super::program::program_object_name())
                }),
                namespace: config
                    .service_namespace
                    .clone()
                    .unwrap_or_else(|| super::pod_namespace::pod_namespace(&self.client)),
            },
        }
    }

    /// The prefix of this operator's webhook configuration names.
    pub(crate) fn webhook_configuration_prefix(&self) -> String {
        self.config
            .webhook
            .configuration_name
            .clone()
            .unwrap_or_else(super::program::program_object_name)
    }

    /// The webhook server's runnable, when webhooks, routes or conversions were added and its
    /// port is on: every replica serves them, leader or not.
    pub(super) fn webhook_server(&self) -> Option<Box<dyn Runnable>> {
        let set = self.webhooks.lock();
        let routes: Vec<Route> = (set.admissions.iter().map(|w| w.route.clone()))
            .chain(set.routes.iter().cloned())
            .chain(super::conversions::conversion_route(&set.converters))
            .collect();
        let config = webhook::Config {
            limits: self.config.serving_limits(),
            ..self.config.webhook.clone()
        };
        if routes.is_empty() || config.port == 0 {
            return None;
        }
        Some(Box::new(WebhookServer {
            admissions: set.admissions.clone(),
            routes,
            config,
            endpoint: self.webhook_endpoint(),
            prefix: self.webhook_configuration_prefix(),
            client: self.client.clone(),
            metrics: self.metrics.webhook(),
        }))
    }
}

/// The webhook server as a runnable: it binds its port, installs the webhook configurations
/// when it has a CA to give them, and serves until shutdown.
struct WebhookServer {
    admissions: Vec<Admission>,
    routes: Vec<Route>,
    config: webhook::Config,
    endpoint: Endpoint,
    prefix: String,
    client: kube::Client,
    metrics: crate::metrics::WebhookMetrics,
}

impl Runnable for WebhookServer {
    fn name(&self) -> String {
        "webhook server".to_owned()
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
        Box::pin(async move { Ok(self.serve(shutdown).await?) })
    }
}

impl WebhookServer {
    async fn serve(self, stop: CancellationToken) -> Result<(), webhook::Error> {
        let config = &self.config;
        let hosts = if config.hosts.is_empty() {
            self.endpoint.default_hosts()
        } else {
            config.hosts.clone()
        };
        let server = Server::bind(config, &hosts, &self.routes).await?;
        tracing::info!(addr = ?server.local_addr(), paths = ?self.routes.iter().map(Route::path).collect::<Vec<_>>(), "serving webhooks");
        let self_signed = server.generated_ca().is_some();
        let ca_bundle = server
            .generated_ca()
            .map(str::to_owned)
            .or_else(|| config.ca_bundle.clone());
        // Aborted if installing fails: the run ends with that error.
        let serving = AbortOnDropHandle::new(tokio::spawn(server.serve(Some(self.metrics), stop)));
        if let Some(ca_bundle) = ca_bundle {
            webhook::install(
                &self.client,
                &self.prefix,
                &self.admissions,
                &self.routes,
                &self.endpoint,
                &ca_bundle,
            )
            .await?;
            if self_signed {
                warn_if_no_service(&self.client, &self.endpoint).await;
            }
        }
        let _ = serving.await;
        Ok(())
    }
}

/// Warns when the webhook configurations just installed name a Service that does not exist (an
/// operator started outside the cluster with `--webhook-self-signed` but no `--webhook-url`):
/// the API server cannot call the webhooks, and every write they review fails. Whether the
/// Service exists cannot always be told (RBAC may not allow reading Services); then it says
/// nothing.
async fn warn_if_no_service(client: &kube::Client, endpoint: &Endpoint) {
    let Endpoint::Service { name, namespace } = endpoint else {
        return;
    };
    let services: kube::Api<Service> = kube::Api::namespaced(client.clone(), namespace);
    if let Ok(None) = services.get_opt(name).await {
        tracing::warn!(
            service = %format!("{namespace}/{name}"),
            "the webhook configurations name Service {namespace}/{name}, which does not exist, so \
             the API server cannot call the webhooks and every write they review fails; outside \
             the cluster pass --webhook-url https://ADDRESS:PORT (an address the API server \
             reaches this process at)"
        );
    }
}
