//! Builds this operator's ValidatingWebhookConfiguration and MutatingWebhookConfiguration.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::api::ObjectMeta;

use super::Endpoint;
use super::admission::{Admission, Kind};

/// The webhook configurations of `webhooks`, named `PREFIX-validating-webhook-configuration` and
/// `PREFIX-mutating-webhook-configuration` (each only if a webhook of its kind exists), calling
/// `endpoint` and trusting `ca_bundle` (PEM) when given.
pub(crate) fn configurations(
    prefix: &str,
    webhooks: &[Admission],
    endpoint: &Endpoint,
    ca_bundle: Option<&str>,
) -> (
    Option<ValidatingWebhookConfiguration>,
    Option<MutatingWebhookConfiguration>,
) {
    let client = |w: &Admission| endpoint.client_config(w.path(), ca_bundle);
    let validating: Vec<_> = webhooks
        .iter()
        .filter(|w| w.kind == Kind::Validating)
        .map(|w| w.validating(client(w)))
        .collect();
    let mutating: Vec<_> = webhooks
        .iter()
        .filter(|w| w.kind == Kind::Mutating)
        .map(|w| w.mutating(client(w)))
        .collect();
    let meta = |kind: &str| ObjectMeta {
        name: Some(configuration_name(prefix, kind)),
        labels: Some(
            [(
                "app.kubernetes.io/managed-by".to_owned(),
                "kubeward".to_owned(),
            )]
            .into(),
        ),
        ..ObjectMeta::default()
    };
    (
        (!validating.is_empty()).then(|| ValidatingWebhookConfiguration {
            metadata: meta("validating"),
            webhooks: Some(validating),
        }),
        (!mutating.is_empty()).then(|| MutatingWebhookConfiguration {
            metadata: meta("mutating"),
            webhooks: Some(mutating),
        }),
    )
}

/// `PREFIX-KIND-webhook-configuration`.
fn configuration_name(prefix: &str, kind: &str) -> String {
    format!("{prefix}-{kind}-webhook-configuration")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::webhook::{Defaulter, FailurePolicy, Validator, Verdict};

    struct Allow;
    impl Validator<ConfigMap> for Allow {}
    impl Defaulter<ConfigMap> for Allow {
        async fn default(
            &self,
            _: &mut ConfigMap,
            _: &kube::core::admission::AdmissionRequest<ConfigMap>,
        ) -> Verdict {
            Verdict::allow()
        }
    }

    #[test]
    fn each_kind_of_webhook_goes_into_its_configuration_with_rules_and_policy() {
        let webhooks = [
            Admission::validator::<ConfigMap>(Allow)
                .failure_policy(FailurePolicy::Ignore)
                .timeout(Duration::from_secs(5)),
            Admission::defaulter::<ConfigMap>(Allow),
        ];
        let endpoint = Endpoint::Service {
            name: "op-webhook".into(),
            namespace: "system".into(),
        };
        let (validating, mutating) = configurations("op", &webhooks, &endpoint, None);
        let validating = serde_json::to_value(validating.unwrap()).unwrap();
        assert_eq!(
            validating["metadata"]["name"],
            "op-validating-webhook-configuration"
        );
        let webhook = &validating["webhooks"][0];
        assert_eq!(webhook["name"], "vconfigmap-v1.kubeward.io");
        assert_eq!(webhook["sideEffects"], "None");
        assert_eq!(webhook["failurePolicy"], "Ignore");
        assert_eq!(webhook["timeoutSeconds"], 5);
        assert_eq!(
            webhook["admissionReviewVersions"],
            serde_json::json!(["v1"])
        );
        assert_eq!(
            webhook["rules"][0],
            serde_json::json!({"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "operations": ["CREATE", "UPDATE"]})
        );
        assert_eq!(
            webhook["clientConfig"],
            serde_json::json!({"service": {"name": "op-webhook", "namespace": "system", "path": "/validate--v1-configmap", "port": 443}})
        );
        let mutating = serde_json::to_value(mutating.unwrap()).unwrap();
        assert_eq!(mutating["webhooks"][0]["failurePolicy"], "Fail");
        assert_eq!(mutating["webhooks"][0]["timeoutSeconds"], 10);
        assert_eq!(
            mutating["webhooks"][0]["clientConfig"]["service"]["path"],
            "/mutate--v1-configmap"
        );
    }

    #[test]
    fn a_url_endpoint_with_a_ca_bundle_is_what_an_operator_outside_the_cluster_installs() {
        let webhooks = [Admission::validator::<ConfigMap>(Allow)];
        let endpoint = Endpoint::Url("https://127.0.0.1:9443/".into());
        let (validating, mutating) = configurations("op", &webhooks, &endpoint, Some("PEM"));
        assert!(mutating.is_none());
        let validating = serde_json::to_value(validating.unwrap()).unwrap();
        assert_eq!(
            validating["webhooks"][0]["clientConfig"],
            serde_json::json!({"url": "https://127.0.0.1:9443/validate--v1-configmap", "caBundle": "UEVN"})
        );
        assert_eq!(endpoint.default_hosts(), ["127.0.0.1", "localhost"]);
    }
}
