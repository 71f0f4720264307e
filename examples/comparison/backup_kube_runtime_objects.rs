//! The object the kube-runtime `Backup` owns, spelled out as in `backup_objects.rs`; not counted.

use k8s_openapi::api::batch::v1::CronJob;
use kube::ResourceExt as _;
use serde_json::json;

use crate::Backup;

/// The `CronJob` running `backup`'s image on its schedule, keeping `keep` finished Jobs.
pub(crate) fn cron_job(backup: &Backup) -> CronJob {
    let container = json!({ "name": "backup", "image": backup.spec.image });
    let value = json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": { "name": backup.name_any() },
        "spec": {
            "schedule": backup.spec.schedule,
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": backup.spec.keep,
            "jobTemplate": { "spec": { "template": { "spec": {
                "restartPolicy": "OnFailure", "containers": [container],
            } } } },
        },
    });
    serde_json::from_value(value).unwrap_or_default()
}
