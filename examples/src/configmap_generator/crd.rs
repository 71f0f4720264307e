//! Defines the `ConfigMapGenerator` custom resource.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::CustomResource;
use kubeward::Controller;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Generator;

// ANCHOR: crd
/// Asks for a ConfigMap holding `content`.
#[derive(
    CustomResource, Controller, Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq,
)]
#[kube(
    group = "demo.kubeward.dev",
    version = "v1",
    kind = "ConfigMapGenerator",
    namespaced,
    status = "ConfigMapGeneratorStatus",
    shortname = "cmg",
    category = "demo"
)]
#[controller(
    reconciler = Generator,
    name = "configmap-generator",
    owns(ConfigMap),
    finalizer = "demo.kubeward.dev/cleanup"
)]
pub struct ConfigMapGeneratorSpec {
    /// What the generated ConfigMap's `content` key holds.
    pub content: String,
}
// ANCHOR_END: crd

/// What the operator observed and did.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapGeneratorStatus {
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The name of the generated ConfigMap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<String>,
    /// `Ready` when the ConfigMap matches the spec.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// A status condition, shaped like `metav1.Condition`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition's type, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A `CamelCase` reason.
    pub reason: String,
    /// A human-readable message.
    pub message: String,
    /// When the status last changed (RFC 3339).
    pub last_transition_time: String,
    /// The generation this condition was set for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
