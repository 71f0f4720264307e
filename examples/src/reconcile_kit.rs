//! The reconcile kit in one small operator: a `Site` asks for one ConfigMap per page.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use kube::{CustomResource, ResourceExt};
use kubeward::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// ANCHOR: status
/// Asks for one ConfigMap per page.
#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kit.example.com",
    version = "v1",
    kind = "Site",
    namespaced,
    status = "SiteStatus"
)]
pub struct SiteSpec {
    /// Page name → content; each becomes the ConfigMap `<site>-<page>`.
    pub pages: BTreeMap<String, String>,
}

/// What the operator observed.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct SiteStatus {
    /// `Ready` once every page's ConfigMap is applied.
    #[serde(default)]
    pub conditions: Conditions,
}
// ANCHOR_END: status

/// The reconciler.
#[derive(Clone, Copy, Debug, Default)]
pub struct Publisher;

// ANCHOR: reconcile
impl Reconciler<Site> for Publisher {
    type Error = kubeward::Error;

    async fn reconcile(&self, site: Arc<Site>, ctx: &Context<Site>) -> Result<Action, Self::Error> {
        let mut keep = Vec::new();
        for (page, content) in &site.spec.pages {
            // Owner reference, field manager, namespace: set by `apply`; no request if unchanged.
            let applied = ctx
                .apply(&site, page_config_map(&site, page, content))
                .await?;
            keep.push(applied.name_any());
        }
        let keep: Vec<&str> = keep.iter().map(String::as_str).collect();
        ctx.prune::<ConfigMap>(&site, &keep).await?; // pages removed from the spec

        // `Ready=True` for this generation, in one status write; no request if unchanged.
        let pages = format!("{} pages", keep.len());
        ctx.succeed(&site, "Published", pages).await?;
        Ok(Action::await_change())
    }
}

impl Cleanup<Site> for Publisher {
    async fn cleanup(&self, site: Arc<Site>, ctx: &Context<Site>) -> Result<(), Self::Error> {
        ctx.prune::<ConfigMap>(&site, &[]).await?; // every ConfigMap the site controls
        Ok(())
    }
}
// ANCHOR_END: reconcile

/// The ConfigMap of one page; `apply` adds the owner reference and the namespace.
fn page_config_map(site: &Site, page: &str, content: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("{}-{page}", site.name_any())),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("content".to_owned(), content.to_owned())])),
        ..ConfigMap::default()
    }
}

// ANCHOR: controller
/// The controller: it owns ConfigMaps, which gives `apply` and `prune` their cache.
pub fn controller() -> Controller<Site> {
    Controller::with_finalizer(Publisher, "kit.example.com/cleanup").owns::<ConfigMap>()
}
// ANCHOR_END: controller
