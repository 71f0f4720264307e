//! The example operator: a `ConfigMapGenerator` custom resource produces a ConfigMap.
//!
//! Its reconciler server-side-applies the owned ConfigMap, reports success on the Ready
//! condition, emits an Event, and deletes the ConfigMap through a finalizer when the generator
//! is deleted. The framework does the rest: the CRD and RBAC manifests, the condition's first
//! state and failures reported on the object, Events for the ConfigMap's writes, no write when
//! nothing changed, leader election, metrics and health. The CRD's older version is
//! [`configmap_generator_v1alpha1`](crate::configmap_generator_v1alpha1).

use k8s_openapi::api::core::v1::ConfigMap;
use kubeward::{Error, prelude::*};

/// An annotation that makes a reconcile take longer, in whole seconds (e.g. `3`), to watch
/// graceful shutdown.
pub const DELAY_ANNOTATION: &str = "demo.kubeward.dev/reconcile-delay";

// ANCHOR: crd
/// Asks for a ConfigMap holding `content`.
#[derive(CustomResource, Controller, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(group = "demo.kubeward.dev", version = "v1", namespaced)]
#[kube(kind = "ConfigMapGenerator", status = "Status")]
#[kube(shortname = "cmg", category = "demo")]
#[controller(reconciler = Generator, name = "configmap-generator", owns(ConfigMap))]
#[controller(owned_events = true)]
#[controller(finalizer = "demo.kubeward.dev/cleanup", predicate = Predicate::generation_changed())]
#[controller(versions(crate::configmap_generator_v1alpha1::ConfigMapGenerator))]
pub struct ConfigMapGeneratorSpec {
    /// What the generated ConfigMap's `content` key holds.
    pub content: String,
}
// The status is the kit's `Status`: the generation observed and the conditions (`Ready` when
// the ConfigMap holds the spec's content).
// ANCHOR_END: crd

/// The reconciler. It holds nothing: the client comes from the [`Context`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Generator;

type Ctx = Context<ConfigMapGenerator>;

// ANCHOR: reconciler
impl Reconciler<ConfigMapGenerator> for Generator {
    type Error = Error;

    async fn reconcile(&self, cmg: Arc<ConfigMapGenerator>, ctx: &Ctx) -> Result<Action, Error> {
        if let Some(Ok(secs)) = cmg.annotations().get(DELAY_ANNOTATION).map(|d| d.parse()) {
            tokio::time::sleep(std::time::Duration::from_secs(secs)).await;
        }
        let name = format!("{}-generated", cmg.name_any());
        let mut cm = ConfigMap::named(&name);
        cm.data = Some([("content".to_owned(), cmg.spec.content.clone())].into());
        ctx.apply(&cmg, cm).await?;
        // ANCHOR: event
        let message = format!("ConfigMap {name} holds the content");
        if ctx.succeed(&cmg, "Generated", message).await?.changed() {
            let generation = cmg.metadata.generation.unwrap_or_default();
            let note = format!("applied ConfigMap {name} for generation {generation}");
            ctx.event(&cmg).normal("Generated", note);
        }
        // ANCHOR_END: event
        Ok(Action::await_change())
    }
}

/// What the finalizer waits for before a deleted generator goes.
impl Cleanup<ConfigMapGenerator> for Generator {
    // ANCHOR: cleanup_event
    async fn cleanup(&self, cmg: Arc<ConfigMapGenerator>, ctx: &Ctx) -> Result<(), Error> {
        ctx.prune::<ConfigMap>(&cmg, &[]).await?; // an Event `Deleted ConfigMap ...` each
        Ok(())
    }
    // ANCHOR_END: cleanup_event
}
// ANCHOR_END: reconciler
