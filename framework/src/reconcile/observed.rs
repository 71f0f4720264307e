//! Holds the status most operators keep: the generation observed and the conditions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Conditions;

/// A custom resource's status when it is what most operators keep, the generation the status
/// describes and the conditions: `#[kube(status = "Status")]` (the prelude brings it in).
/// [`Context::report`](crate::controller::Context::report) and
/// [`Context::succeed`](crate::controller::Context::succeed) write both in one status write;
/// a status with fields of its own is a struct of the operator's with these two fields. The
/// CRD describes it to `kubectl explain` as "What the controller observed".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
#[schemars(description = "What the controller observed.")]
pub struct Status {
    /// The generation the status describes.
    pub observed_generation: Option<i64>,
    /// The conditions, at most one per type; the controller's own is `Ready` unless it names
    /// another.
    pub conditions: Conditions,
}
