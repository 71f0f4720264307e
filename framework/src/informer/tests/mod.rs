//! Informer tests that run the reflector against the fake API server.

mod backlog;
mod cooperation;
mod namespaces;
mod outage;
mod pagination;
mod relist;
mod streaming;
mod traps;
mod wire;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

/// An empty ConfigMap `name` in `namespace`.
fn config_map(namespace: &str, name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}
