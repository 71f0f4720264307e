//! Installs this operator's webhook configurations, and its CRDs' conversion webhook addresses,
//! with a CA bundle: what cert-manager's CA injector does in a cluster, done by the operator for
//! development and tests.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};

use super::configurations::configurations;
use super::{Admission, Endpoint, Error, Route};

/// The field manager of what the operator installs.
const FIELD_MANAGER: &str = "kubeward-webhook";

/// Applies the configurations of `webhooks` (server-side apply, taking over their fields) and
/// points the CRD of each conversion route at `endpoint`, trusting `ca_bundle`.
///
/// # Errors
/// [`Error::Install`] naming the object the API server refused.
pub(crate) async fn install(
    client: &Client,
    prefix: &str,
    webhooks: &[Admission],
    routes: &[Route],
    endpoint: &Endpoint,
    ca_bundle: &str,
) -> Result<(), Error> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let (validating, mutating) = configurations(prefix, webhooks, endpoint, Some(ca_bundle));
    if let Some(configuration) = validating {
        let name = configuration.metadata.name.clone().unwrap_or_default();
        Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .patch(&name, &params, &Patch::Apply(&configuration))
            .await
            .map_err(|e| install_failed(format!("ValidatingWebhookConfiguration {name}"), e))?;
        tracing::info!(%name, "installed the validating webhook configuration");
    }
    if let Some(configuration) = mutating {
        let name = configuration.metadata.name.clone().unwrap_or_default();
        Api::<MutatingWebhookConfiguration>::all(client.clone())
            .patch(&name, &params, &Patch::Apply(&configuration))
            .await
            .map_err(|e| install_failed(format!("MutatingWebhookConfiguration {name}"), e))?;
        tracing::info!(%name, "installed the mutating webhook configuration");
    }
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    // Plain loops: an iterator with closures held across the awaits below would make the
    // future not `Send` for every lifetime.
    for route in routes {
        for crd in &route.converts {
            let mut client_config =
                serde_json::to_value(endpoint.client_config(route.path(), Some(ca_bundle)))
                    .unwrap_or_default();
            // A merge patch keeps what it does not name: `null` removes a `service` (or `url`) that
            // the CRD had before, since a client config may hold only one of them.
            if let Some(fields) = client_config.as_object_mut() {
                for key in ["url", "service"] {
                    fields.entry(key).or_insert(serde_json::Value::Null);
                }
            }
            let patch = serde_json::json!({
                "spec": { "conversion": {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": client_config,
                        "conversionReviewVersions": ["v1"],
                    },
                }},
            });
            crds.patch(crd, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| install_failed(format!("the conversion webhook of CRD {crd}"), e))?;
            tracing::info!(%crd, "pointed the CRD's conversion webhook at this operator");
        }
    }
    Ok(())
}

fn install_failed(what: String, source: kube::Error) -> Error {
    Error::Install {
        what,
        source: Box::new(source),
    }
}
