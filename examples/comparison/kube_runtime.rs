//! The example operator written with kube-runtime alone, for the book's comparison page.
//!
//! Same behaviour as `configmap_generator` where kube-runtime has the parts: the owned ConfigMap
//! (server-side apply, repaired when edited), the finalizer, status with a Ready condition and
//! observedGeneration, Events and a `crd` subcommand. Not here, because kube-runtime has none:
//! leader election, metrics, health probes, RBAC generation, flags (`kube_runtime_full.rs` adds
//! the first four from other crates, for `scripts/bench build`).

// A kube-runtime author prints the CRD as any program would; kubeward's own lints forbid `print!`.
// Its context holds kube-runtime's `Recorder`, which has no `Debug`.
#![allow(clippy::print_stdout, missing_debug_implementations)]

// ANCHOR: operator
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::watcher;
use kube::{Api, Client, CustomResource, CustomResourceExt as _, Resource as _, ResourceExt as _};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Asks for a ConfigMap holding `content`.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "demo.kubeward.dev",
    version = "v1",
    kind = "ConfigMapGenerator"
)]
#[kube(namespaced, status = "ConfigMapGeneratorStatus", shortname = "cmg")]
pub struct ConfigMapGeneratorSpec {
    content: String,
}

/// What the operator observed and did.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapGeneratorStatus {
    observed_generation: Option<i64>,
    conditions: Vec<Condition>,
}

/// A status condition, shaped like `metav1.Condition` (k8s-openapi's has no JSON schema).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    reason: String,
    message: String,
    last_transition_time: String,
    observed_generation: Option<i64>,
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the API server failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// Adding or removing the finalizer failed.
    #[error(transparent)]
    Finalizer(#[from] Box<kube::runtime::finalizer::Error<kube::Error>>),
}

/// What every reconcile is given.
pub struct Ctx {
    /// The client of the API server.
    pub client: Client,
    /// Publishes Events about the generators.
    pub recorder: Recorder,
}

/// The field manager of the applied ConfigMaps, and the controller that reports Events.
pub const MANAGER: &str = "configmap-generator";

async fn apply(generator: Arc<ConfigMapGenerator>, ctx: &Ctx) -> Result<Action, kube::Error> {
    let namespace = generator.namespace().unwrap_or_default();
    let name = format!("{}-generated", generator.name_any());
    let wanted = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            owner_references: generator.controller_owner_ref(&()).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        data: Some([("content".to_owned(), generator.spec.content.clone())].into()),
        ..ConfigMap::default()
    };
    let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let params = PatchParams::apply(MANAGER).force();
    configmaps
        .patch(&name, &params, &Patch::Apply(&wanted))
        .await?;
    let generation = generator.metadata.generation;
    let status = generator.status.clone().unwrap_or_default();
    if status.observed_generation == generation {
        return Ok(Action::await_change());
    }
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready");
    let since = ready
        .filter(|c| c.status == "True")
        .map(|c| c.last_transition_time.clone());
    let condition = Condition {
        type_: "Ready".into(),
        status: "True".into(),
        reason: "Generated".into(),
        message: format!("ConfigMap {name} holds the content"),
        last_transition_time: since.unwrap_or_else(|| Timestamp::now().to_string()),
        observed_generation: generation,
    };
    let patch =
        json!({ "status": { "observedGeneration": generation, "conditions": [condition] } });
    let generators: Api<ConfigMapGenerator> = Api::namespaced(ctx.client.clone(), &namespace);
    let params = PatchParams::default();
    generators
        .patch_status(&generator.name_any(), &params, &Patch::Merge(&patch))
        .await?;
    let note = format!(
        "applied ConfigMap {name} for generation {}",
        generation.unwrap_or_default()
    );
    publish(ctx, &generator, "Generated", note).await;
    Ok(Action::await_change())
}

async fn cleanup(generator: Arc<ConfigMapGenerator>, ctx: &Ctx) -> Result<Action, kube::Error> {
    let namespace = generator.namespace().unwrap_or_default();
    let name = format!("{}-generated", generator.name_any());
    let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    match configmaps.delete(&name, &DeleteParams::default()).await {
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(Action::await_change()),
        result => result?,
    };
    publish(
        ctx,
        &generator,
        "Deleted",
        format!("deleted ConfigMap {name}"),
    )
    .await;
    Ok(Action::await_change())
}

async fn publish(ctx: &Ctx, generator: &ConfigMapGenerator, reason: &str, note: String) {
    let event = Event {
        type_: EventType::Normal,
        reason: reason.into(),
        note: Some(note),
        action: reason.into(),
        secondary: None,
    };
    let reference = generator.object_ref(&());
    if let Err(error) = ctx.recorder.publish(&event, &reference).await {
        tracing::warn!(%error, "publishing an event");
    }
}

/// Applies the ConfigMap and status of `generator`, or, once it is deleted, deletes the ConfigMap.
///
/// # Errors
/// When a request to the API server fails.
pub async fn reconcile(generator: Arc<ConfigMapGenerator>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let namespace = generator.namespace().unwrap_or_default();
    let generators: Api<ConfigMapGenerator> = Api::namespaced(ctx.client.clone(), &namespace);
    let cleanup_name = "demo.kubeward.dev/cleanup";
    let action = finalizer(&generators, cleanup_name, generator, |event| async {
        match event {
            Finalizer::Apply(generator) => apply(generator, &ctx).await,
            Finalizer::Cleanup(generator) => cleanup(generator, &ctx).await,
        }
    });
    Ok(action.await.map_err(Box::new)?)
}

/// Retries a failed reconcile after 5 s.
pub fn error_policy(_: Arc<ConfigMapGenerator>, error: &Error, _: Arc<Ctx>) -> Action {
    tracing::warn!(%error, "reconcile failed");
    Action::requeue(Duration::from_secs(5))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("crd") {
        print!("{}", serde_norway::to_string(&ConfigMapGenerator::crd())?);
        return Ok(());
    }
    tracing_subscriber::fmt::init();
    let client = Client::try_default().await?;
    let reporter = Reporter {
        controller: MANAGER.into(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        recorder,
    });
    let generators: Api<ConfigMapGenerator> = Api::all(client.clone());
    let configmaps: Api<ConfigMap> = Api::all(client);
    Controller::new(generators, watcher::Config::default())
        .owns(configmaps, watcher::Config::default())
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::warn!(%error, "reconcile failed");
            }
        })
        .await;
    Ok(())
}
// ANCHOR_END: operator
