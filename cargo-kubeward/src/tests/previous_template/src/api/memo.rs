//! The `Memo` custom resource (`example.com/v1alpha1`): what it asks for and what the
//! operator reports. After changing it, `cargo run -- manifests` rewrites the chart's CRD.

use k8s_openapi::api::core::v1::ConfigMap;
use kubeward::prelude::*;

use crate::controller::memo::MemoReconciler;

/// Asks for a ConfigMap holding `content`.
#[derive(CustomResource, Controller, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(group = "example.com", version = "v1alpha1", kind = "Memo", namespaced)]
#[kube(status = "MemoStatus")]
#[kube(
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#
)]
#[controller(reconciler = MemoReconciler, owns(ConfigMap), finalizer = "example.com/memo-cleanup")]
#[controller(predicate = Predicate::generation_changed())]
pub struct MemoSpec {
    /// What the ConfigMap's `content` key holds.
    pub content: String,
}

/// What the operator observed and did.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct MemoStatus {
    /// The generation the status describes.
    pub observed_generation: Option<i64>,
    /// `Ready` once the ConfigMap holds the spec's content.
    pub conditions: Conditions,
}
