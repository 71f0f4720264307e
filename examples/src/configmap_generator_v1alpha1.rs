//! The example CRD's first version, `v1alpha1`, where the content was called `data`: still
//! served (deprecated), stored as `v1`, converted by the operator's conversion webhook.

use std::convert::Infallible;

use kubeward::conversion::Convertible;
use kubeward::prelude::*;

// ANCHOR: v1alpha1
/// Asks for a ConfigMap holding `data` (replaced by `v1`, where it is called `content`).
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(group = "demo.kubeward.dev", version = "v1alpha1", namespaced)]
#[kube(kind = "ConfigMapGenerator", status = "Status")]
#[kube(shortname = "cmg", category = "demo")]
#[kube(deprecated = "demo.kubeward.dev/v1alpha1 ConfigMapGenerator is deprecated; use v1")]
pub struct ConfigMapGeneratorSpec {
    /// What the generated ConfigMap's `content` key holds.
    pub data: String,
}

/// `v1alpha1` ↔ `v1`, the hub: `data` is `v1`'s `content`; metadata and status carry over.
impl Convertible<crate::configmap_generator::ConfigMapGenerator> for ConfigMapGenerator {
    type Error = Infallible;

    fn to_hub(self) -> Result<crate::configmap_generator::ConfigMapGenerator, Infallible> {
        Ok(crate::configmap_generator::ConfigMapGenerator {
            metadata: self.metadata,
            spec: crate::configmap_generator::ConfigMapGeneratorSpec {
                content: self.spec.data,
            },
            status: self.status,
        })
    }

    fn from_hub(hub: crate::configmap_generator::ConfigMapGenerator) -> Result<Self, Infallible> {
        Ok(Self {
            metadata: hub.metadata,
            spec: ConfigMapGeneratorSpec {
                data: hub.spec.content,
            },
            status: hub.status,
        })
    }
}
// ANCHOR_END: v1alpha1
