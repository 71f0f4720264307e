//! Helpers shared by kubeward's integration tests that users of the `testing` kit would not need.

use k8s_openapi::api::core::v1::{Event, ObjectReference};
use kube::api::ObjectMeta;

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
