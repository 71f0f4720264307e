//! Reconciles a `ConfigMapGenerator`: applies its ConfigMap, writes status, emits Events.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use serde_json::json;

use super::{Condition, ConfigMapGenerator, ConfigMapGeneratorStatus};

/// The finalizer the operator puts on every generator (as declared in `#[controller(...)]`).
pub const FINALIZER: &str = "demo.kubeward.dev/cleanup";
/// The field manager of the operator's server-side applies.
pub const MANAGER: &str = "configmap-generator";
/// An annotation that makes a reconcile take longer (e.g. `3s`), to watch graceful shutdown.
pub const DELAY_ANNOTATION: &str = "demo.kubeward.dev/reconcile-delay";

/// The reconciler. It holds nothing: the client comes from the [`Context`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Generator;

// ANCHOR: controller
/// The controller built by hand, without the derive: what `ConfigMapGenerator::controller`
/// generates from `#[controller(...)]`. It owns ConfigMaps and has a finalizer.
pub fn controller_without_macro() -> Controller<ConfigMapGenerator> {
    Controller::new(Generator)
        .name("configmap-generator")
        .owns::<ConfigMap>()
        .finalizer(FINALIZER)
}
// ANCHOR_END: controller

/// The name of the ConfigMap a generator produces.
#[must_use]
pub fn generated_name(generator: &ConfigMapGenerator) -> String {
    format!("{}-generated", generator.name_any())
}

/// The Ready condition's transition time: kept while it stays True, else now.
fn transition_time(generator: &ConfigMapGenerator) -> String {
    let previous = generator.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == "Ready" && c.status == "True")
    });
    previous.map_or_else(
        || {
            k8s_openapi::jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
        },
        |c| c.last_transition_time.clone(),
    )
}

// ANCHOR: reconciler
impl Reconciler<ConfigMapGenerator> for Generator {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        generator: Arc<ConfigMapGenerator>,
        ctx: &Context<ConfigMapGenerator>,
    ) -> Result<Action, kube::Error> {
        if let Some(delay) = generator.annotations().get(DELAY_ANNOTATION) {
            let delay = kubeward::manager::parse_duration(delay).unwrap_or_default();
            tokio::time::sleep(delay).await;
        }
        let namespace = generator.namespace().unwrap_or_default();
        let name = generated_name(&generator);
        let owner = generator.controller_owner_ref(&());
        let wanted = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                owner_references: owner.map(|o| vec![o]),
                ..ObjectMeta::default()
            },
            data: Some([("content".to_owned(), generator.spec.content.clone())].into()),
            ..ConfigMap::default()
        };
        let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client(), &namespace);
        let apply = PatchParams::apply(MANAGER).force();
        configmaps
            .patch(&name, &apply, &Patch::Apply(&wanted))
            .await?;

        let generation = generator.metadata.generation;
        // Ready too: after a failed reconcile the controller set it to False, and this success
        // must set it back even when the generation did not change.
        let already_reported = generator.status.as_ref().is_some_and(|s| {
            s.observed_generation == generation
                && s.config_map.as_deref() == Some(&name)
                && s.conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
        });
        if !already_reported {
            let status = ConfigMapGeneratorStatus {
                observed_generation: generation,
                config_map: Some(name.clone()),
                conditions: vec![Condition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    reason: "Generated".into(),
                    message: format!("ConfigMap {name} holds the content"),
                    last_transition_time: transition_time(&generator),
                    observed_generation: generation,
                }],
            };
            let generators: Api<ConfigMapGenerator> = Api::namespaced(ctx.client(), &namespace);
            let patch = json!({ "status": status });
            generators
                .patch_status(
                    &generator.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await?;
            // ANCHOR: event
            ctx.event(&generator).action("Apply").normal(
                "Generated",
                format!(
                    "applied ConfigMap {name} for generation {}",
                    generation.unwrap_or_default()
                ),
            );
            // ANCHOR_END: event
        }
        Ok(Action::await_change())
    }

    async fn cleanup(
        &self,
        generator: Arc<ConfigMapGenerator>,
        ctx: &Context<ConfigMapGenerator>,
    ) -> Result<(), kube::Error> {
        let namespace = generator.namespace().unwrap_or_default();
        let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client(), &namespace);
        match configmaps
            .delete(&generated_name(&generator), &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => return Err(e),
        }
        // ANCHOR: cleanup_event
        // Recording never fails, so an Event cannot keep the finalizer on the object.
        ctx.event(&generator).action("Cleanup").normal(
            "Deleted",
            format!("deleted ConfigMap {}", generated_name(&generator)),
        );
        Ok(())
        // ANCHOR_END: cleanup_event
    }
}
// ANCHOR_END: reconciler
