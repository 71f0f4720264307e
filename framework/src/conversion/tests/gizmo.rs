//! Three versions of a `Gizmo`: `v1` is the hub; `v1alpha1` cannot hold the hub's `finish` (kept
//! in an annotation) nor a size above `u16::MAX` (an error); `v2` counts in millimetres.

use std::collections::BTreeMap;
use std::convert::Infallible;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::conversion::{Converter, Convertible};

/// Where `v1alpha1` keeps the hub's `paint.finish`.
pub(super) const FINISH: &str = "test.kubeward.dev/finish";

pub(super) mod v1alpha1 {
    use super::*;

    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "test.kubeward.dev",
        version = "v1alpha1",
        kind = "Gizmo",
        namespaced
    )]
    #[kube(status = "super::GizmoStatus")]
    pub(crate) struct GizmoSpec {
        pub(crate) size: u16,
        pub(crate) colour: String,
    }
}

pub(super) mod v1 {
    use super::*;

    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "test.kubeward.dev",
        version = "v1",
        kind = "Gizmo",
        namespaced
    )]
    #[kube(status = "super::GizmoStatus")]
    pub(crate) struct GizmoSpec {
        pub(crate) size: u32,
        pub(crate) paint: Paint,
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub(crate) struct Paint {
        pub(crate) colour: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(crate) finish: Option<String>,
    }
}

pub(super) mod v2 {
    use super::*;

    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "test.kubeward.dev",
        version = "v2",
        kind = "Gizmo",
        namespaced
    )]
    #[kube(status = "super::GizmoStatus")]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct GizmoSpec {
        pub(crate) size_mm: u64,
        pub(crate) paint: super::v1::Paint,
    }
}

/// Another kind of the same group, for the wrong-kind cases.
pub(super) mod other {
    use super::*;

    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "test.kubeward.dev",
        version = "v1alpha1",
        kind = "Widget",
        namespaced
    )]
    pub(crate) struct WidgetSpec {
        pub(crate) on: bool,
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct GizmoStatus {
    pub(crate) ready: bool,
}

/// The size does not fit `v1alpha1`.
#[derive(Debug, thiserror::Error)]
#[error("size {0} does not fit v1alpha1's 16 bits")]
pub(crate) struct TooBig(pub(crate) u32);

impl Convertible<v1::Gizmo> for v1alpha1::Gizmo {
    type Error = TooBig;

    fn to_hub(mut self) -> Result<v1::Gizmo, TooBig> {
        let finish = self
            .metadata
            .annotations
            .as_mut()
            .and_then(|a| a.remove(FINISH));
        if self
            .metadata
            .annotations
            .as_ref()
            .is_some_and(BTreeMap::is_empty)
        {
            self.metadata.annotations = None;
        }
        let paint = v1::Paint {
            colour: self.spec.colour,
            finish,
        };
        Ok(v1::Gizmo {
            metadata: self.metadata,
            spec: v1::GizmoSpec {
                size: self.spec.size.into(),
                paint,
            },
            status: self.status,
        })
    }

    fn from_hub(mut hub: v1::Gizmo) -> Result<Self, TooBig> {
        let size = u16::try_from(hub.spec.size).map_err(|_| TooBig(hub.spec.size))?;
        if let Some(finish) = hub.spec.paint.finish {
            hub.metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(FINISH.to_owned(), finish);
        }
        Ok(v1alpha1::Gizmo {
            metadata: hub.metadata,
            spec: v1alpha1::GizmoSpec {
                size,
                colour: hub.spec.paint.colour,
            },
            status: hub.status,
        })
    }
}

impl Convertible<v1::Gizmo> for v2::Gizmo {
    type Error = Infallible;

    fn to_hub(self) -> Result<v1::Gizmo, Infallible> {
        Ok(v1::Gizmo {
            metadata: self.metadata,
            spec: v1::GizmoSpec {
                size: u32::try_from(self.spec.size_mm / 10).unwrap_or(u32::MAX),
                paint: self.spec.paint,
            },
            status: self.status,
        })
    }

    fn from_hub(hub: v1::Gizmo) -> Result<Self, Infallible> {
        Ok(v2::Gizmo {
            metadata: hub.metadata,
            spec: v2::GizmoSpec {
                size_mm: u64::from(hub.spec.size) * 10,
                paint: hub.spec.paint,
            },
            status: hub.status,
        })
    }
}

/// The converter of the three versions, through the hub.
pub(super) fn converter() -> Converter {
    Converter::with_hub::<v1::Gizmo>()
        .spoke::<v1alpha1::Gizmo>()
        .spoke::<v2::Gizmo>()
        .build()
}

/// A `v1alpha1` gizmo as the API server sends it, with metadata kubeward's types do not know.
pub(super) fn old_gizmo(name: &str, size: u16) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "test.kubeward.dev/v1alpha1",
        "kind": "Gizmo",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": "0b1c",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": { "team": "a" },
            "annotations": { "note": "kept", FINISH: "matte" },
            "finalizers": ["test.kubeward.dev/cleanup"],
            "managedFields": [{ "manager": "kubectl", "operation": "Apply",
                "apiVersion": "test.kubeward.dev/v1alpha1", "fieldsType": "FieldsV1",
                "fieldsV1": { "f:spec": { "f:size": {} } } }],
            "aFieldFromTheFuture": { "kept": true },
        },
        "spec": { "size": size, "colour": "red" },
        "status": { "ready": true },
    })
}
