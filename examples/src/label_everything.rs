//! A controller over a kind named at run time: finds it by discovery and labels every object of
//! it, whatever its Rust type would be (there is none: objects are `DynamicObject`s).

use std::sync::Arc;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::{self, ApiCapabilities, Discovery};
use kube::{Api, Client, ResourceExt as _};
use kubeward::controller::{Action, Context, Controller, Reconciler};

/// The label the controller puts on every object of its kind, valued with the controller's name.
pub const LABEL: &str = "kubeward.dev/seen-by";

// ANCHOR: discover
/// Finds the kind `name` among those the API server serves: `Kind.version.group` (as in
/// `Widget.v1.example.com`), `Kind.version` for the core group (`ConfigMap.v1`), or a bare `Kind`
/// looked up in every group at its preferred version.
///
/// # Errors
/// When no served kind is called `name` (the error names it), when a bare kind is served by
/// several groups (the error lists them), or when discovery fails.
pub async fn discover(
    client: &Client,
    name: &str,
) -> anyhow::Result<(ApiResource, ApiCapabilities)> {
    let mut parts = name.splitn(3, '.');
    let kind = parts.next().unwrap_or_default();
    let not_served = || anyhow::anyhow!("the API server serves no kind {name:?}");
    let Some(version) = parts.next() else {
        return only_group_serving(client, kind, name).await;
    };
    let gvk = GroupVersionKind::gvk(parts.next().unwrap_or_default(), version, kind);
    match discovery::pinned_kind(client, &gvk).await {
        Ok(found) => Ok(found),
        // No such kind in the group version, or no such group version.
        Err(kube::Error::Discovery(_)) => Err(not_served()),
        Err(kube::Error::Api(status)) if status.code == 404 => Err(not_served()),
        Err(error) => Err(anyhow::Error::new(error).context(format!("discovering {name:?}"))),
    }
}
// ANCHOR_END: discover

/// The one group serving `kind` at its preferred version.
async fn only_group_serving(
    client: &Client,
    kind: &str,
    name: &str,
) -> anyhow::Result<(ApiResource, ApiCapabilities)> {
    let discovery = Discovery::new(client.clone()).run().await?;
    let mut found: Vec<_> = discovery
        .groups()
        .filter_map(|group| group.recommended_kind(kind))
        .collect();
    match found.len() {
        0 => anyhow::bail!("the API server serves no kind {name:?}"),
        1 => Ok(found.remove(0)),
        _ => {
            let mut names: Vec<_> = found
                .iter()
                .map(|(r, _)| format!("{}.{}", r.kind, r.api_version.replace('/', ".")))
                .collect();
            names.sort();
            anyhow::bail!(
                "several groups serve a kind {name:?}: name one of {}",
                names.join(", ")
            )
        }
    }
}

// ANCHOR: reconciler
/// Labels each object of its controller's kind with [`LABEL`].
#[derive(Debug)]
pub struct Labeller;

impl Reconciler<DynamicObject> for Labeller {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        obj: Arc<DynamicObject>,
        ctx: &Context<DynamicObject>,
    ) -> Result<Action, kube::Error> {
        if obj.labels().get(LABEL).map(String::as_str) == Some(ctx.name()) {
            return Ok(Action::await_change());
        }
        // The kind's ApiResource, found by discovery, comes with the context.
        let api: Api<DynamicObject> = match obj.namespace() {
            Some(namespace) => Api::namespaced_with(ctx.client(), &namespace, ctx.resource()),
            None => Api::all_with(ctx.client(), ctx.resource()),
        };
        let patch = serde_json::json!({ "metadata": { "labels": { LABEL: ctx.name() } } });
        api.patch(
            &obj.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
        Ok(Action::await_change())
    }
}
// ANCHOR_END: reconciler

// ANCHOR: controller
/// The controller that labels every object of the kind discovery found.
pub fn controller(
    resource: &ApiResource,
    capabilities: &ApiCapabilities,
) -> Controller<DynamicObject> {
    Controller::dynamic(Labeller, resource, &capabilities.scope)
        .name(format!("label-{}", resource.plural))
        // Any kind may come, with or without a `conditions` list in its status: report
        // failures as Events only.
        .report_errors_on_status(false)
}
// ANCHOR_END: controller
