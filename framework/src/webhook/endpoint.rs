//! Says where the API server reaches the webhook server: a Service, or a URL.

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{ServiceReference, WebhookClientConfig};

/// The port of the webhook Service (the chart maps it to the webhook port).
const SERVICE_PORT: i32 = 443;

/// Where the API server sends reviews.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `https://NAME.NAMESPACE.svc:443/PATH`.
    Service { name: String, namespace: String },
    /// `BASE/PATH`, e.g. `https://127.0.0.1:9443` for an operator outside the cluster.
    Url(String),
}

impl Endpoint {
    /// The client configuration of the webhook at `path`, trusting `ca_bundle` (PEM) if given.
    pub(crate) fn client_config(&self, path: &str, ca_bundle: Option<&str>) -> WebhookClientConfig {
        let ca_bundle = ca_bundle.map(|pem| ByteString(pem.as_bytes().to_vec()));
        match self {
            Self::Service { name, namespace } => WebhookClientConfig {
                ca_bundle,
                service: Some(ServiceReference {
                    name: name.clone(),
                    namespace: namespace.clone(),
                    path: Some(path.to_owned()),
                    port: Some(SERVICE_PORT),
                }),
                url: None,
            },
            Self::Url(base) => WebhookClientConfig {
                ca_bundle,
                service: None,
                url: Some(format!("{}{path}", base.trim_end_matches('/'))),
            },
        }
    }

    /// The DNS names a serving certificate for this endpoint needs, with `localhost` and
    /// `127.0.0.1`; for a URL, its host.
    pub(crate) fn default_hosts(&self) -> Vec<String> {
        let mut hosts = match self {
            Self::Service { name, namespace } => vec![
                format!("{name}.{namespace}.svc"),
                format!("{name}.{namespace}.svc.cluster.local"),
            ],
            Self::Url(base) => http::Uri::try_from(base.as_str())
                .ok()
                .and_then(|uri| uri.host().map(str::to_owned))
                .into_iter()
                .collect(),
        };
        for local in ["localhost", "127.0.0.1"] {
            if !hosts.iter().any(|h| h == local) {
                hosts.push(local.to_owned());
            }
        }
        hosts
    }
}
