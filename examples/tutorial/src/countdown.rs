// ANCHOR: file
//! Defines the `Countdown` custom resource.

// ANCHOR: crd
use kube::CustomResource;
use kubeward::Controller;
use kubeward::controller::Predicate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Timer;

/// Counts down `seconds`, then reports `Done`.
#[derive(CustomResource, Controller, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "tutorial.kubeward.dev",
    version = "v1",
    kind = "Countdown",
    namespaced,
    status = "CountdownStatus",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#
)]
#[controller(reconciler = Timer, predicate = Predicate::generation_changed())]
pub struct CountdownSpec {
    /// How long the countdown runs.
    pub seconds: u32,
}

/// What the operator has done with a countdown.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CountdownStatus {
    /// `Counting`, then `Done`.
    pub phase: Phase,
    /// When the countdown ends (RFC 3339).
    pub deadline: String,
    /// The generation (the spec) the countdown was started for.
    pub observed_generation: Option<i64>,
}

/// Where a countdown is.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
pub enum Phase {
    /// The deadline has not passed yet.
    #[default]
    Counting,
    /// The deadline has passed.
    Done,
}
// ANCHOR_END: crd
// ANCHOR_END: file
