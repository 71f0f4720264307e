//! Adds admission webhooks, routes and conversions to a Manager, for its webhook server.

use super::webhook_server::WebhookServer;
use super::webhook_set::Webhooks;
use crate::manager::{Manager, Result};
use crate::process::program::program_object_name;
use crate::webhook::{self, Admissible, Admission, Defaulter, Endpoint, Route, Validator};

impl Manager {
    /// Serves `webhook` on the webhook server (see [`webhook`]), which every
    /// replica runs, leader or not.
    ///
    /// # Errors
    /// [`Error::DuplicatePath`](crate::manager::Error::DuplicatePath) if a webhook or route with
    /// the same path was added before.
    pub fn add_webhook(&self, webhook: Admission) -> Result<()> {
        let webhooks = self.webhook_set();
        let mut set = webhooks.0.lock();
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
        let webhooks = self.webhook_set();
        let mut set = webhooks.0.lock();
        set.claim(route.path())?;
        set.routes.push(route);
        Ok(())
    }

    /// The admission webhooks added so far.
    #[cfg_attr(
        not(feature = "cli"),
        expect(dead_code, reason = "only the command line's subcommands read it")
    )]
    pub(crate) fn webhooks(&self) -> Vec<Admission> {
        let webhooks = self.part::<Webhooks>().unwrap_or_default();
        webhooks.0.lock().admissions.clone()
    }

    /// The webhook set, made at the first webhook, route or conversion added, when the webhook
    /// server also becomes one of the manager's runnables (unless its port is 0).
    pub(super) fn webhook_set(&self) -> Webhooks {
        let (webhooks, new) = self.part_or_keep(Webhooks::default);
        if new && self.config().webhook.port != 0 {
            let server = WebhookServer {
                webhooks: webhooks.clone(),
                config: webhook::Config {
                    limits: super::secure::limits(self.config()),
                    ..self.config().webhook.clone()
                },
                endpoint: self.webhook_endpoint(),
                prefix: self.webhook_configuration_prefix(),
                client: self.client(),
                metrics: self.metrics().webhook(),
            };
            // A runnable as it is is always added.
            let _ = self.add(server);
        }
        webhooks
    }

    /// Where the API server reaches this operator's webhooks, as configured.
    pub(crate) fn webhook_endpoint(&self) -> Endpoint {
        let config = &self.config().webhook;
        match &config.url {
            Some(url) => Endpoint::Url(url.clone()),
            None => Endpoint::Service {
                name: (config.service.clone())
                    .unwrap_or_else(|| format!("{}-webhook", program_object_name())),
                namespace: config.service_namespace.clone().unwrap_or_else(|| {
                    crate::process::pod_namespace::pod_namespace(&self.client())
                }),
            },
        }
    }

    /// The prefix of this operator's webhook configuration names.
    pub(crate) fn webhook_configuration_prefix(&self) -> String {
        (self.config().webhook.configuration_name.clone()).unwrap_or_else(program_object_name)
    }
}
