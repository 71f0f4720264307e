//! Runs the webhook server: it binds its port, installs the webhook configurations, and serves
//! the webhooks, routes and conversions added to the manager on every replica.

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Service;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::webhook_set::Webhooks;
use crate::manager::{BoxError, Runnable};
use crate::webhook::{self, Endpoint, Route, Server};

/// The webhook server as a runnable: it binds its port, installs the webhook configurations
/// when it has a CA to give them, and serves until shutdown.
pub(super) struct WebhookServer {
    /// What it serves, read when it starts.
    pub(super) webhooks: Webhooks,
    pub(super) config: webhook::Config,
    pub(super) endpoint: Endpoint,
    pub(super) prefix: String,
    pub(super) client: kube::Client,
    pub(super) metrics: crate::metrics::WebhookMetrics,
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
        let (admissions, routes) = {
            let set = self.webhooks.0.lock();
            (set.admissions.clone(), set.all_routes())
        };
        let config = &self.config;
        let hosts = if config.hosts.is_empty() {
            self.endpoint.default_hosts()
        } else {
            config.hosts.clone()
        };
        let server = Server::bind(config, &hosts, &routes).await?;
        tracing::info!(addr = ?server.local_addr(), paths = ?routes.iter().map(Route::path).collect::<Vec<_>>(), "serving webhooks");
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
                &admissions,
                &routes,
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
