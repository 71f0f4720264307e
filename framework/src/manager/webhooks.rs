//! Adds admission webhooks and routes to a Manager and starts its webhook server.

use k8s_openapi::api::core::v1::Service;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{Error, Manager, Result};
use crate::webhook::{self, Admissible, Admission, Defaulter, Endpoint, Route, Server, Validator};

impl Manager {
    /// Serves `webhook` on the webhook server (see [`webhook`]), which every
    /// replica runs, leader or not.
    ///
    /// # Errors
    /// [`Error::DuplicatePath`] if a webhook or route with the same path was added before.
    pub fn add_webhook(&self, webhook: Admission) -> Result<()> {
        self.claim_path(webhook.path())?;
        self.webhooks.lock().push(webhook);
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
        self.claim_path(route.path())?;
        self.routes.lock().push(route);
        Ok(())
    }

    /// Reserves `path` on the webhook server.
    ///
    /// # Errors
    /// [`Error::DuplicatePath`] when a webhook or route has it already.
    pub(super) fn claim_path(&self, path: &str) -> Result<()> {
        if self.webhook_paths.lock().insert(path.to_owned()) {
            return Ok(());
        }
        Err(Error::DuplicatePath {
            path: path.to_owned(),
        })
    }

    /// The admission webhooks added so far.
    pub(crate) fn webhooks(&self) -> Vec<Admission> {
        self.webhooks.lock().clone()
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

    /// Binds the webhook server, when webhooks or routes were added and its port is on, installs
    /// the webhook configurations when it has a CA to give them, and serves until `stop`.
    pub(super) async fn start_webhooks(
        &self,
        stop: &CancellationToken,
        servers: &mut JoinSet<()>,
    ) -> Result<()> {
        let webhooks = self.webhooks.lock().clone();
        let routes: Vec<Route> = webhooks
            .iter()
            .map(|w| w.route.clone())
            .chain(self.routes.lock().iter().cloned())
            .chain(self.conversion_route())
            .collect();
        let config = &webhook::Config {
            limits: self.config.serving_limits(),
            ..self.config.webhook.clone()
        };
        if routes.is_empty() || config.port == 0 {
            return Ok(());
        }
        let endpoint = self.webhook_endpoint();
        let hosts = if config.hosts.is_empty() {
            endpoint.default_hosts()
        } else {
            config.hosts.clone()
        };
        let server = Server::bind(config, &hosts, &routes)
            .await
            .map_err(Error::Webhook)?;
        tracing::info!(addr = ?server.local_addr(), paths = ?routes.iter().map(Route::path).collect::<Vec<_>>(), "serving webhooks");
        let self_signed = server.generated_ca().is_some();
        let ca_bundle = server
            .generated_ca()
            .map(str::to_owned)
            .or_else(|| config.ca_bundle.clone());
        servers.spawn(server.serve(Some(self.metrics.webhook()), stop.clone()));
        if let Some(ca_bundle) = ca_bundle {
            webhook::install(
                &self.client,
                &self.webhook_configuration_prefix(),
                &webhooks,
                &routes,
                &endpoint,
                &ca_bundle,
            )
            .await
            .map_err(Error::Webhook)?;
            if self_signed {
                warn_if_no_service(&self.client, &endpoint).await;
            }
        }
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
