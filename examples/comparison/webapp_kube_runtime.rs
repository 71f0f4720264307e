//! The second example operator, `WebApp`, written with kube-runtime alone, for the comparison page.
//!
//! Same behaviour as `webapp` where kube-runtime has the parts: the owned Deployment and Service
//! (server-side apply, owner references), sized from the spec, the `Available` condition with its
//! printer columns, Events on create and scale, the finalizer that deletes both, and a `crd`
//! subcommand. Not here, because kube-runtime has none: failures reported on the condition,
//! leader election, metrics, health probes, RBAC generation, flags. The objects' literals are in
//! `webapp_kube_runtime_objects.rs`, not counted, like `webapp_objects.rs`.

// A kube-runtime author prints the CRD as any program would; kubeward's own lints forbid `print!`.
#![allow(clippy::print_stdout)]

// ANCHOR: operator
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::{apps::v1::Deployment, core::v1::Service};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::watcher;
use kube::{Api, Client, CustomResource, CustomResourceExt as _, Resource as _, ResourceExt as _};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::json;

#[path = "webapp_kube_runtime_objects.rs"]
mod objects;

/// Runs `image` as `replicas` pods behind a Service on `port`.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "apps.kubeward.dev", version = "v1", kind = "WebApp")]
#[kube(namespaced, status = "WebAppStatus", shortname = "wa")]
#[kube(
    printcolumn = r#"{"name":"Available","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Available\")].reason"}"#,
    printcolumn = r#"{"name":"Message","type":"string","priority":1,"jsonPath":".status.conditions[?(@.type==\"Available\")].message"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct WebAppSpec {
    image: String,
    replicas: i32,
    port: i32,
}

/// What the operator observed.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct WebAppStatus {
    replicas: i32,
    conditions: Vec<Condition>,
}

/// A status condition, shaped like `metav1.Condition` (k8s-openapi's has no JSON schema).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
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

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Finalizer(#[from] Box<kube::runtime::finalizer::Error<kube::Error>>),
}

struct Ctx {
    client: Client,
    recorder: Recorder,
}

const MANAGER: &str = "webapp";

async fn apply(app: Arc<WebApp>, ctx: &Ctx) -> Result<Action, kube::Error> {
    let (namespace, name) = (app.namespace().unwrap_or_default(), app.name_any());
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let services: Api<Service> = Api::namespaced(ctx.client.clone(), &namespace);
    let existed = deployments.get_opt(&name).await?.is_some();
    let created = !existed || services.get_opt(&name).await?.is_none();
    let owner = app.controller_owner_ref(&()).map(|o| vec![o]);
    let (mut deployment, mut service) = (objects::deployment(&app), objects::service(&app));
    deployment.metadata.owner_references.clone_from(&owner);
    service.metadata.owner_references = owner;
    let params = PatchParams::apply(MANAGER).force();
    let deployment = deployments
        .patch(&name, &params, &Patch::Apply(&deployment))
        .await?;
    services
        .patch(&name, &params, &Patch::Apply(&service))
        .await?;
    if created {
        publish(ctx, &app, "Created", "created its objects".into()).await;
    }
    let (mut status, replicas) = (app.status.clone().unwrap_or_default(), app.spec.replicas);
    if existed && status.replicas != replicas {
        let note = format!("scaled from {} to {replicas} replicas", status.replicas);
        publish(ctx, &app, "Scaled", note).await;
    }
    let ready = deployment.status.and_then(|s| s.available_replicas);
    let available = if ready >= Some(replicas) {
        "True"
    } else {
        "False"
    };
    let since = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Available" && c.status == available)
        .map(|c| c.last_transition_time.clone());
    status.replicas = replicas;
    status.conditions = vec![Condition {
        type_: "Available".into(),
        status: available.into(),
        reason: "Replicas".into(),
        message: format!("{} of {replicas} replicas available", ready.unwrap_or(0)),
        last_transition_time: since.unwrap_or_else(|| Timestamp::now().to_string()),
        observed_generation: app.metadata.generation,
    }];
    let apps: Api<WebApp> = Api::namespaced(ctx.client.clone(), &namespace);
    let patch = json!({ "status": status });
    apps.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(Action::await_change())
}

async fn cleanup(app: Arc<WebApp>, ctx: &Ctx) -> Result<Action, kube::Error> {
    let (namespace, name) = (app.namespace().unwrap_or_default(), app.name_any());
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let services: Api<Service> = Api::namespaced(ctx.client.clone(), &namespace);
    let n = delete(&deployments, &name).await? + delete(&services, &name).await?;
    publish(ctx, &app, "Deleted", format!("deleted {n}")).await;
    Ok(Action::await_change())
}

/// Deletes `name`: 1 if it was there, 0 if it was already gone.
async fn delete<K>(api: &Api<K>, name: &str) -> Result<usize, kube::Error>
where
    K: Clone + Debug + DeserializeOwned,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(1),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(0),
        Err(error) => Err(error),
    }
}

async fn publish(ctx: &Ctx, app: &WebApp, reason: &str, note: String) {
    let event = Event {
        type_: EventType::Normal,
        reason: reason.into(),
        note: Some(note),
        action: reason.into(),
        secondary: None,
    };
    if let Err(error) = ctx.recorder.publish(&event, &app.object_ref(&())).await {
        tracing::warn!(%error, "publishing an event");
    }
}

async fn reconcile(app: Arc<WebApp>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let apps: Api<WebApp> =
        Api::namespaced(ctx.client.clone(), &app.namespace().unwrap_or_default());
    let action = finalizer(&apps, "apps.kubeward.dev/cleanup", app, |event| async {
        match event {
            Finalizer::Apply(app) => apply(app, &ctx).await,
            Finalizer::Cleanup(app) => cleanup(app, &ctx).await,
        }
    });
    Ok(action.await.map_err(Box::new)?)
}

fn error_policy(_: Arc<WebApp>, error: &Error, _: Arc<Ctx>) -> Action {
    tracing::warn!(%error, "reconcile failed");
    Action::requeue(Duration::from_secs(5))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("crd") {
        print!("{}", serde_norway::to_string(&WebApp::crd())?);
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
    let apps: Api<WebApp> = Api::all(client.clone());
    Controller::new(apps, watcher::Config::default())
        .owns(
            Api::<Deployment>::all(client.clone()),
            watcher::Config::default(),
        )
        .owns(Api::<Service>::all(client), watcher::Config::default())
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
