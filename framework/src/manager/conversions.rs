//! Serves the conversions of the manager's CRDs at `/convert` on its webhook server.

use std::sync::Arc;

use bytes::Bytes;
use http::{Response, header};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    ServiceReference, WebhookClientConfig,
};

use super::{Manager, Result};
use crate::conversion::{Converter, answer_body};
use crate::crd::{CONVERSION_PATH, CustomResourceDefinition};
use crate::webhook::Route;

impl Manager {
    /// Serves `converter` at [`/convert`](CONVERSION_PATH) on the webhook server, which every
    /// replica runs, leader or not: the API server needs conversions to serve the kind at all.
    /// With a self-signed certificate (`--webhook-self-signed`) the manager points the CRD's
    /// conversion webhook at itself, with its CA. `#[controller(versions(...))]` generates
    /// `Kind::converter()` to add; a second converter of the same CRD is ignored. Like admission
    /// webhooks, conversions are added explicitly: the webhook server needs a certificate.
    ///
    /// # Errors
    /// [`Error::DuplicatePath`](super::Error::DuplicatePath) if a route at `/convert` was added
    /// with [`Self::add_route`].
    pub fn add_conversion(&self, converter: Converter) -> Result<()> {
        let mut set = self.webhooks.lock();
        if set.converters.is_empty() {
            set.claim(CONVERSION_PATH)?;
        }
        if (set.converters.iter()).all(|c| c.crd_name() != converter.crd_name()) {
            set.converters.push(converter);
        }
        Ok(())
    }

    /// Whether this manager serves the conversions of the CRD `name` (a converter and a port).
    pub(crate) fn serves_conversions(&self, name: &str) -> bool {
        self.config.webhook.port != 0
            && (self.webhooks.lock().converters.iter()).any(|c| c.crd_name() == name)
    }

    /// `crd` with its conversion webhook, if it has one, pointed at this manager's webhook
    /// endpoint (the Service the webhook configurations name, or `--webhook-url`), so that the
    /// manifests name one Service for every webhook.
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

/// The route answering `ConversionReview`s with `converters`, if there are any.
pub(super) fn conversion_route(converters: &[Converter]) -> Option<Route> {
    if converters.is_empty() {
        return None;
    }
    let converters: Arc<[Converter]> = converters.to_vec().into();
    let crds: Vec<String> = converters.iter().map(|c| c.crd_name().to_owned()).collect();
    let route = Route::new(CONVERSION_PATH, move |body: Bytes| {
        let (status, body) = answer_body(&converters, &body);
        let mut response = Response::new(Bytes::from(body));
        *response.status_mut() = status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        std::future::ready(response)
    });
    Some(crds.into_iter().fold(route, Route::converts))
}
