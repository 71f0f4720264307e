//! The objects the kube-runtime `WebApp` owns, spelled out as in `webapp_objects.rs`; not counted.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt as _;
use serde_json::json;

use crate::WebApp;

/// The Deployment running `app`'s image, sized from its spec.
pub(crate) fn deployment(app: &WebApp) -> Deployment {
    let name = app.name_any();
    let labels = json!({ "app.kubernetes.io/name": name });
    let container = json!({
        "name": "web", "image": app.spec.image,
        "ports": [{ "containerPort": app.spec.port, "protocol": "TCP" }],
    });
    from_json(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": name, "labels": labels },
        "spec": {
            "replicas": app.spec.replicas,
            "selector": { "matchLabels": labels },
            "template": { "metadata": { "labels": labels }, "spec": { "containers": [container] } },
        },
    }))
}

/// The Service in front of `app`'s pods.
pub(crate) fn service(app: &WebApp) -> Service {
    let name = app.name_any();
    from_json(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": { "name": name },
        "spec": {
            "selector": { "app.kubernetes.io/name": name },
            "ports": [{ "port": 80, "targetPort": app.spec.port, "protocol": "TCP" }],
        },
    }))
}

/// `value` as a `K`: the literals above are valid objects, whatever the spec says.
fn from_json<K: serde::de::DeserializeOwned + Default>(value: serde_json::Value) -> K {
    serde_json::from_value(value).unwrap_or_default()
}
