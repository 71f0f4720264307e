//! Admission webhooks on the real control plane: the kube-apiserver calls the manager's HTTPS
//! server at `https://127.0.0.1:PORT/...` with the CA in the configuration's `caBundle`.

mod admission;
mod conversion_route;
mod example;
mod failure_policy;
mod rotation;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::admission::AdmissionRequest;
use kube::{Api, Client};
use kubeward::manager::{Config, Manager};
use kubeward::testing::{free_addr, wait_for};
use kubeward::webhook::{self, Admission, Defaulter, Validator, Verdict};

/// The longest ConfigMap value the validator admits.
const MAX_VALUE: usize = 16;
/// The label the defaulter sets when it is missing.
const DEFAULTED: &str = "defaulted-by";

/// Refuses ConfigMaps with a value longer than [`MAX_VALUE`] bytes.
struct ShortValues;

impl Validator<ConfigMap> for ShortValues {
    async fn validate_create(&self, cm: &ConfigMap, _: &AdmissionRequest<ConfigMap>) -> Verdict {
        check(cm)
    }

    async fn validate_update(
        &self,
        _: &ConfigMap,
        cm: &ConfigMap,
        _: &AdmissionRequest<ConfigMap>,
    ) -> Verdict {
        check(cm)
    }
}

fn check(cm: &ConfigMap) -> Verdict {
    for (key, value) in cm.data.iter().flatten() {
        if value.len() > MAX_VALUE {
            return Verdict::deny(format!(
                "data.{key} is {} bytes; at most {MAX_VALUE} are allowed",
                value.len()
            ));
        }
    }
    Verdict::allow()
}

/// Labels ConfigMaps `defaulted-by: kubeward` unless they say otherwise.
struct Labeller;

impl Defaulter<ConfigMap> for Labeller {
    async fn default(&self, cm: &mut ConfigMap, _: &AdmissionRequest<ConfigMap>) -> Verdict {
        cm.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .entry(DEFAULTED.into())
            .or_insert_with(|| "kubeward".into());
        Verdict::allow()
    }
}

/// Labels namespace `ns` with its name as `kubernetes.io/metadata.name`, as API servers from
/// 1.21 on do by themselves (the local one is 1.20), so that [`only_in`] selects it.
pub(crate) async fn label_namespace(client: &Client, ns: &str) -> anyhow::Result<()> {
    let patch = serde_json::json!({"metadata": {"labels": {"kubernetes.io/metadata.name": ns}}});
    Api::<Namespace>::all(client.clone())
        .patch(ns, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Only objects in namespace `ns` go to the webhook, so that tests running at once do not meet.
pub(crate) fn only_in(ns: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some([("kubernetes.io/metadata.name".to_owned(), ns.to_owned())].into()),
        ..LabelSelector::default()
    }
}

/// A manager serving webhooks on a free loopback port for objects in `ns`, installing its configurations (named
/// after `ns`) with `config`'s CA, the API server calling `https://127.0.0.1:PORT`.
async fn manager(
    client: Client,
    ns: &str,
    config: webhook::Config,
) -> anyhow::Result<(Manager, u16)> {
    label_namespace(&client, ns).await?;
    let port = free_addr()?.port();
    let config = config
        .port(port)
        .url(format!("https://127.0.0.1:{port}"))
        .configuration_name(ns);
    Ok((
        Manager::new(client, Config::default().webhook(config))?,
        port,
    ))
}

/// A ConfigMap `name` holding `value` under `key`.
fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some([("key".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    }
}

/// The message of the API server's refusal to create `cm`, or `None` when it was created.
async fn refusal(api: &Api<ConfigMap>, cm: &ConfigMap, params: &PostParams) -> Option<String> {
    match api.create(params, cm).await {
        Ok(_) => None,
        Err(kube::Error::Api(status)) => Some(status.message),
        Err(e) => Some(e.to_string()),
    }
}

/// Waits until the API server sends ConfigMaps to the validator: a too-long value is refused
/// with its message (objects created before that are named `probe-N`).
async fn wait_until_validated(api: &Api<ConfigMap>) -> anyhow::Result<String> {
    let mut attempt = 0;
    let message = wait_for(
        Duration::from_secs(30),
        "the API server to call the validating webhook",
        || {
            attempt += 1;
            let cm = config_map(&format!("probe-{attempt}"), &"x".repeat(MAX_VALUE + 1));
            async move { refusal(api, &cm, &PostParams::default()).await }
        },
    )
    .await?;
    Ok(message)
}

/// Deletes the webhook configurations named after `ns`.
pub(crate) async fn remove_configurations(client: &Client, ns: &str) {
    let params = DeleteParams::default();
    let _ = Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .delete(&format!("{ns}-validating-webhook-configuration"), &params)
        .await;
    let _ = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .delete(&format!("{ns}-mutating-webhook-configuration"), &params)
        .await;
}

/// A validating webhook on ConfigMaps in `ns`.
fn validator_in(ns: &str) -> Admission {
    Admission::validator::<ConfigMap>(ShortValues).namespace_selector(only_in(ns))
}
