//! The third example operator, `Backup`, written with kube-runtime alone, for the comparison page.
//!
//! Same behaviour as `backup` where kube-runtime has the parts: the owned `CronJob` (server-side
//! apply, an owner reference, so the garbage collector deletes it with its owner), the `Ready`
//! condition with the last backup's time and its printer columns, Events on create and on a
//! schedule change, and a `crd` subcommand. Not here, because kube-runtime has none: failures
//! reported on the condition, leader election, metrics, health probes, RBAC generation, flags.
//! The `CronJob`'s literal is in `backup_kube_runtime_objects.rs`, not counted, like
//! `backup_objects.rs`.

// A kube-runtime author prints the CRD as any program would; kubeward's own lints forbid `print!`.
#![allow(clippy::print_stdout)]

// ANCHOR: operator
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::watcher;
use kube::{Api, Client, CustomResource, CustomResourceExt as _, Resource as _, ResourceExt as _};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[path = "backup_kube_runtime_objects.rs"]
mod objects;

/// Runs `image` on `schedule` (cron syntax), keeping the last `keep` successful runs.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "backups.kubeward.dev", version = "v1", kind = "Backup")]
#[kube(namespaced, status = "BackupStatus", shortname = "bk")]
#[kube(
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name":"Message","type":"string","priority":1,"jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct BackupSpec {
    schedule: String,
    image: String,
    keep: i32,
}

/// What the operator observed.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct BackupStatus {
    last_backup: Option<String>,
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

const MANAGER: &str = "backup";

async fn reconcile(backup: Arc<Backup>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
    let (namespace, name) = (backup.namespace().unwrap_or_default(), backup.name_any());
    let cron_jobs: Api<CronJob> = Api::namespaced(ctx.client.clone(), &namespace);
    let before = cron_jobs.get_opt(&name).await?;
    let mut cron_job = objects::cron_job(&backup);
    cron_job.metadata.owner_references = backup.controller_owner_ref(&()).map(|o| vec![o]);
    let params = PatchParams::apply(MANAGER).force();
    let cron_job = cron_jobs
        .patch(&name, &params, &Patch::Apply(&cron_job))
        .await?;
    let schedule = &backup.spec.schedule;
    match before.map(|b| b.spec.schedule) {
        None => publish(&ctx, &backup, "Created", format!("created CronJob {name}")).await,
        Some(old) if old != *schedule => {
            let note = format!("schedule changed from {old} to {schedule}");
            publish(&ctx, &backup, "Rescheduled", note).await;
        }
        Some(_) => {}
    }
    let mut status = backup.status.clone().unwrap_or_default();
    status.last_backup =
        (cron_job.status.and_then(|s| s.last_successful_time)).map(|time| time.0.to_string());
    let last = status.last_backup.as_deref().unwrap_or("none yet");
    let since = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == "True")
        .map(|c| c.last_transition_time.clone());
    status.conditions = vec![Condition {
        type_: "Ready".into(),
        status: "True".into(),
        reason: "Scheduled".into(),
        message: format!("runs on {schedule}; last backup {last}"),
        last_transition_time: since.unwrap_or_else(|| Timestamp::now().to_string()),
        observed_generation: backup.metadata.generation,
    }];
    let backups: Api<Backup> = Api::namespaced(ctx.client.clone(), &namespace);
    let patch = json!({ "status": status });
    backups
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(Action::await_change())
}

async fn publish(ctx: &Ctx, backup: &Backup, reason: &str, note: String) {
    let event = Event {
        type_: EventType::Normal,
        reason: reason.into(),
        note: Some(note),
        action: reason.into(),
        secondary: None,
    };
    if let Err(error) = ctx.recorder.publish(&event, &backup.object_ref(&())).await {
        tracing::warn!(%error, "publishing an event");
    }
}

fn error_policy(_: Arc<Backup>, error: &kube::Error, _: Arc<Ctx>) -> Action {
    tracing::warn!(%error, "reconcile failed");
    Action::requeue(Duration::from_secs(5))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("crd") {
        print!("{}", serde_norway::to_string(&Backup::crd())?);
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
    let backups: Api<Backup> = Api::all(client.clone());
    Controller::new(backups, watcher::Config::default())
        .owns(Api::<CronJob>::all(client), watcher::Config::default())
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
