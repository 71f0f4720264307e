//! The third example operator, `Database`, written with kube-runtime alone, for the comparison
//! page.
//!
//! Same behaviour as `database` where kube-runtime has the parts: the owned StatefulSet and
//! headless Service (server-side apply, owner references, so the garbage collector deletes them
//! with their owner), sized from the spec, the `Ready` condition with its printer columns, an Event
//! per object created, and a `crd` subcommand. Not here, because kube-runtime has none: failures
//! (such as the refused storage change) reported on the condition, leader election, metrics,
//! health probes, RBAC generation, flags. The objects' literals are in
//! `database_kube_runtime_objects.rs`, not counted, like `database_objects.rs`.

// A kube-runtime author prints the CRD as any program would; kubeward's own lints forbid `print!`.
#![allow(clippy::print_stdout)]

// ANCHOR: operator
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::Service};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::watcher;
use kube::{Api, Client, CustomResource, CustomResourceExt as _, Resource, ResourceExt as _};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::json;

#[path = "database_kube_runtime_objects.rs"]
mod objects;

/// Runs `image` as `replicas` pods, each with a volume of `storage` (a quantity: `1Gi`).
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "data.kubeward.dev", version = "v1", kind = "Database")]
#[kube(namespaced, status = "DatabaseStatus", shortname = "db")]
#[kube(
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name":"Message","type":"string","priority":1,"jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct DatabaseSpec {
    image: String,
    replicas: i32,
    storage: String,
}

/// What the operator observed.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct DatabaseStatus {
    observed_generation: Option<i64>,
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

struct Ctx {
    client: Client,
    recorder: Recorder,
}

const MANAGER: &str = "database";

/// Applies `obj`, owned by `db`, and publishes a Created Event when it did not exist before.
async fn apply<K>(db: &Database, obj: K, ctx: &Ctx) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    K: Clone + Debug + Serialize + DeserializeOwned,
{
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &db.namespace().unwrap_or_default());
    let name = db.name_any();
    let existed = api.get_opt(&name).await?.is_some();
    let mut obj = obj;
    obj.meta_mut().owner_references = db.controller_owner_ref(&()).map(|o| vec![o]);
    let params = PatchParams::apply(MANAGER).force();
    let applied = api.patch(&name, &params, &Patch::Apply(&obj)).await?;
    if !existed {
        let note = format!("Created {} {name}", K::kind(&()));
        publish(ctx, db, "Created", note).await;
    }
    Ok(applied)
}

async fn reconcile(db: Arc<Database>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
    apply(&db, objects::service(&db), &ctx).await?;
    let set = apply(&db, objects::stateful_set(&db), &ctx).await?;
    let ready = set.status.and_then(|s| s.ready_replicas);
    let replicas = db.spec.replicas;
    let mut status = db.status.clone().unwrap_or_default();
    let holds = if ready >= Some(replicas) {
        "True"
    } else {
        "False"
    };
    let since = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == holds)
        .map(|c| c.last_transition_time.clone());
    status.observed_generation = db.metadata.generation;
    status.conditions = vec![Condition {
        type_: "Ready".into(),
        status: holds.into(),
        reason: "Replicas".into(),
        message: format!("{} of {replicas} replicas ready", ready.unwrap_or(0)),
        last_transition_time: since.unwrap_or_else(|| Timestamp::now().to_string()),
        observed_generation: db.metadata.generation,
    }];
    let dbs: Api<Database> =
        Api::namespaced(ctx.client.clone(), &db.namespace().unwrap_or_default());
    let patch = json!({ "status": status });
    dbs.patch_status(
        &db.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(Action::await_change())
}

async fn publish(ctx: &Ctx, db: &Database, reason: &str, note: String) {
    let event = Event {
        type_: EventType::Normal,
        reason: reason.into(),
        note: Some(note),
        action: reason.into(),
        secondary: None,
    };
    if let Err(error) = ctx.recorder.publish(&event, &db.object_ref(&())).await {
        tracing::warn!(%error, "publishing an event");
    }
}

fn error_policy(_: Arc<Database>, error: &kube::Error, _: Arc<Ctx>) -> Action {
    tracing::warn!(%error, "reconcile failed");
    Action::requeue(Duration::from_secs(5))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("crd") {
        print!("{}", serde_norway::to_string(&Database::crd())?);
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
    let dbs: Api<Database> = Api::all(client.clone());
    Controller::new(dbs, watcher::Config::default())
        .owns(
            Api::<StatefulSet>::all(client.clone()),
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
