//! Adds the conversions of the operator's CRDs to a Manager, served at `/convert` on its webhook
//! server.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    ServiceReference, WebhookClientConfig,
};

use super::webhook_set::Webhooks;
use crate::conversion::Converter;
use crate::crd::{CONVERSION_PATH, CustomResourceDefinition};
use crate::manager::{Manager, Result};

impl Manager {
    /// Serves `converter` at [`/convert`](CONVERSION_PATH) on the webhook server, which every
    /// replica runs, leader or not: the API server needs conversions to serve the kind at all.
    /// With a self-signed certificate (`--webhook-self-signed`) the manager points the CRD's
    /// conversion webhook at itself, with its CA. `#[controller(versions(...))]` generates
    /// `Kind::converter()` to add; a second converter of the same CRD is ignored. Like admission
    /// webhooks, conversions are added explicitly: the webhook server needs a certificate.
    ///
    /// # Errors
    /// [`Error::DuplicatePath`](crate::manager::Error::DuplicatePath) if a route at `/convert` was added
    /// with [`Self::add_route`].
    pub fn add_conversion(&self, converter: Converter) -> Result<()> {
        let webhooks = self.webhook_set();
        let mut set = webhooks.0.lock();
        if set.converters.is_empty() {
            set.claim(CONVERSION_PATH)?;
        }
        if (set.converters.iter()).all(|c| c.crd_name() != converter.crd_name()) {
            set.converters.push(converter);
        }
        Ok(())
    }

    /// Whether this manager serves the conversions of the CRD `name` (a converter and a port).
    #[cfg_attr(
        not(feature = "cli"),
        expect(dead_code, reason = "only the command line's subcommands read it")
    )]
    pub(crate) fn serves_conversions(&self, name: &str) -> bool {
        let Some(webhooks) = self.part::<Webhooks>() else {
            return false;
        };
        self.config().webhook.port != 0
            && (webhooks.0.lock().converters.iter()).any(|c| c.crd_name() == name)
    }

    /// `crd` with its conversion webhook, if it has one, pointed at this manager's webhook
    /// endpoint (the Service the webhook configurations name, or `--webhook-url`), so that the
    /// manifests name one Service for every webhook.
    #[cfg_attr(
        not(feature = "cli"),
        expect(dead_code, reason = "only the command line's subcommands read it")
    )]
    pub(crate) fn point_conversion(
        &self,
        mut crd: CustomResourceDefinition,
    ) -> CustomResourceDefinition {
        let Some(webhook) = crd
            .spec
            .conversion
            .as_mut()
            .and_then(|c| c.webhook.as_mut())
        else {
            return crd;
        };
        let client = self.webhook_endpoint().client_config(CONVERSION_PATH, None);
        webhook.client_config = Some(WebhookClientConfig {
            ca_bundle: client.ca_bundle,
            url: client.url,
            service: client.service.map(|s| ServiceReference {
                name: s.name,
                namespace: s.namespace,
                path: s.path,
                port: s.port,
            }),
        });
        crd
    }
}
