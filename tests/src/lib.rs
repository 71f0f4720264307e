//! Helpers shared by kubeward's integration tests: the testing kit's, under their old names.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, ObjectReference};
use kube::api::ObjectMeta;

/// Waits until `check` returns `Some` (see [`kubeward::testing::wait_for`]).
///
/// # Errors
/// The condition did not hold within `timeout`; the message says what was expected.
pub async fn wait_for<T, F, Fut>(timeout: Duration, what: &str, check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    Ok(kubeward::testing::wait_for(timeout, what, check).await?)
}

/// Installs the CRD of `K` and waits until it is served (see [`kubeward::testing::install_crd`]).
///
/// # Errors
/// The API refused the CRD, or it was not established within 30 s.
pub async fn ensure_crd<K: kube::CustomResourceExt>(client: kube::Client) -> anyhow::Result<()> {
    Ok(kubeward::testing::install_crd::<K>(client).await?)
}

/// Installs the polished CRD of `K` (as the operator's `crd` subcommand prints it) and waits until
/// it is served (see [`kubeward::testing::install_definition`]).
///
/// # Errors
/// The API refused the CRD, or it was not established within 30 s.
pub async fn ensure_definition<K: kubeward::crd::Definition>(
    client: kube::Client,
) -> anyhow::Result<()> {
    Ok(kubeward::testing::install_definition::<K>(client).await?)
}

/// An Event about ConfigMap `subject` in `ns`: a cheap object to create and change in bulk.
#[must_use]
pub fn event_about_a_config_map(ns: &str, name: &str, message: &str) -> Event {
    Event {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            kind: Some("ConfigMap".into()),
            name: Some("subject".into()),
            namespace: Some(ns.into()),
            ..ObjectReference::default()
        },
        reason: Some("Testing".into()),
        message: Some(message.into()),
        ..Event::default()
    }
}

/// The sum of `read` over the series of metric `family` in `registry` labelled `label = value`.
pub fn metric_sum(
    registry: &prometheus::Registry,
    family: &str,
    (label, value): (&str, &str),
    read: impl Fn(&prometheus::proto::Metric) -> f64,
) -> f64 {
    registry
        .gather()
        .iter()
        .filter(|f| f.name() == family)
        .flat_map(|f| f.get_metric().iter())
        .filter(|m| {
            m.get_label()
                .iter()
                .any(|l| l.name() == label && l.value() == value)
        })
        .map(read)
        .sum()
}
