//! Two versions of a `Gadget`: `v1alpha1`, the first, and `v1`, the hub and storage version,
//! with fields of every shape (numbers, strings, lists, maps, optional and nested ones, status).

use std::collections::BTreeMap;

use kube::CustomResource;
use kubeward::conversion::Convertible;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub(super) mod v1alpha1 {
    use super::*;

    /// The first version: a flat spec.
    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "conversion.kubeward.dev",
        version = "v1alpha1",
        kind = "Gadget"
    )]
    #[kube(namespaced, status = "super::GadgetStatus", derive = "PartialEq")]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct GadgetSpec {
        pub(crate) size: u16,
        pub(crate) colour: String,
        pub(crate) finish: Option<String>,
        pub(crate) tags: Vec<String>,
        pub(crate) settings: BTreeMap<String, String>,
        pub(crate) enabled: bool,
        pub(crate) ratio: f64,
    }
}

pub(super) mod v1 {
    use super::*;

    /// The second version: the paint is one nested field, `enabled` became `paused`.
    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(group = "conversion.kubeward.dev", version = "v1", kind = "Gadget")]
    #[kube(namespaced, status = "super::GadgetStatus", derive = "PartialEq")]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct GadgetSpec {
        pub(crate) size: u32,
        pub(crate) paint: Paint,
        pub(crate) tags: Vec<String>,
        pub(crate) settings: BTreeMap<String, String>,
        pub(crate) paused: bool,
        pub(crate) ratio: f64,
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub(crate) struct Paint {
        pub(crate) colour: String,
        pub(crate) finish: Option<String>,
    }
}

/// What the gadget reports, in both versions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GadgetStatus {
    pub(crate) observed_generation: Option<i64>,
    pub(crate) message: String,
}

/// The size does not fit `v1alpha1`.
#[derive(Debug, thiserror::Error)]
#[error("size {0} does not fit v1alpha1's 16 bits")]
pub(crate) struct TooBig(u32);

impl Convertible<v1::Gadget> for v1alpha1::Gadget {
    type Error = TooBig;

    fn to_hub(self) -> Result<v1::Gadget, TooBig> {
        let s = self.spec;
        let spec = v1::GadgetSpec {
            size: s.size.into(),
            paint: v1::Paint {
                colour: s.colour,
                finish: s.finish,
            },
            tags: s.tags,
            settings: s.settings,
            paused: !s.enabled,
            ratio: s.ratio,
        };
        Ok(v1::Gadget {
            metadata: self.metadata,
            spec,
            status: self.status,
        })
    }

    fn from_hub(hub: v1::Gadget) -> Result<Self, TooBig> {
        let s = hub.spec;
        let spec = v1alpha1::GadgetSpec {
            size: u16::try_from(s.size).map_err(|_| TooBig(s.size))?,
            colour: s.paint.colour,
            finish: s.paint.finish,
            tags: s.tags,
            settings: s.settings,
            enabled: !s.paused,
            ratio: s.ratio,
        };
        Ok(Self {
            metadata: hub.metadata,
            spec,
            status: hub.status,
        })
    }
}
