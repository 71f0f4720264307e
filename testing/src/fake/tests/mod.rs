//! Checks the fake's API semantics through a real `kube::Client`.

mod objects;
mod streaming;
mod watch;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{
    DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{Api, CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::*;

#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[kube(
    group = "fake.kubeward.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
struct WidgetSpec {
    size: i64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
struct WidgetStatus {
    ready: bool,
}

fn fake() -> FakeApiServer {
    let fake = FakeApiServer::new();
    fake.register::<ConfigMap>();
    fake.register::<ClusterRole>();
    fake.register_crd::<Widget>();
    fake
}

fn config_map(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

fn widget(name: &str, size: i64) -> Widget {
    Widget::new(name, WidgetSpec { size })
}

fn api_status(result: Result<impl std::fmt::Debug, kube::Error>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.reason),
        other => panic!("expected an API error status, got {other:?}"),
    }
}

fn rv(object: &impl ResourceExt) -> u64 {
    object
        .resource_version()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or_default()
}
