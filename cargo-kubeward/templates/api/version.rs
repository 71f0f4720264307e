//! `@@kind@@` as `@@group@@/@@version@@`: another version the API server serves. It is stored as
//! the hub, `@@hub_version@@` (`crate::api::@@module@@`), and converted by the operator's conversion
//! webhook (`cargo kubeward create webhook --kind @@kind@@ --conversion`).

use std::convert::Infallible;

use kubeward::conversion::Convertible;
use kubeward::prelude::*;

use crate::api::@@module@@::{self as hub, @@kind@@Status};

/// Asks for a ConfigMap holding `content`, as `@@version@@`.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(group = "@@group@@", version = "@@version@@", kind = "@@kind@@", namespaced)]
#[kube(status = "@@kind@@Status")]
pub struct @@kind@@Spec {
    /// What the ConfigMap's `content` key holds.
    pub content: String,
}

/// `@@version@@` ↔ `@@hub_version@@`, the hub: the fields carry over as they are. Change both
/// directions when the versions' fields differ.
impl Convertible<hub::@@kind@@> for @@kind@@ {
    type Error = Infallible;

    fn to_hub(self) -> Result<hub::@@kind@@, Infallible> {
        Ok(hub::@@kind@@ {
            metadata: self.metadata,
            spec: hub::@@kind@@Spec {
                content: self.spec.content,
            },
            status: self.status,
        })
    }

    fn from_hub(hub: hub::@@kind@@) -> Result<Self, Infallible> {
        Ok(Self {
            metadata: hub.metadata,
            spec: @@kind@@Spec {
                content: hub.spec.content,
            },
            status: hub.status,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_@@module@@_converts_to_the_hub_and_back_unchanged() -> Result<(), Infallible> {
        let spec = @@kind@@Spec {
            content: "hello".to_owned(),
        };
        let object = @@kind@@::new("test", spec);
        let back = @@kind@@::from_hub(object.clone().to_hub()?)?;
        assert_eq!(back.spec.content, object.spec.content);
        assert_eq!(back.metadata, object.metadata);
        Ok(())
    }
}
