// ANCHOR: file
//! Reconciles a `Countdown`: starts it, and finishes it once its deadline has passed.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt as _};
use kubeward::controller::{Action, Context, Reconciler};
use serde_json::json;

use crate::{Countdown, CountdownStatus, Phase};

// ANCHOR: reconciler
/// The reconciler of `Countdown`s. It holds nothing: the client comes from the [`Context`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Timer;

impl Reconciler<Countdown> for Timer {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        countdown: Arc<Countdown>,
        ctx: &Context<Countdown>,
    ) -> Result<Action, kube::Error> {
        let now = Timestamp::now();
        // The status describes this spec only if it was written for this generation.
        let status = countdown
            .status
            .as_ref()
            .filter(|s| s.observed_generation == countdown.metadata.generation);
        if status.is_some_and(|s| s.phase == Phase::Done) {
            return Ok(Action::await_change());
        }
        let Some(deadline) = status.and_then(|s| s.deadline.parse::<Timestamp>().ok()) else {
            // A new countdown, or its spec changed: start counting.
            let seconds = countdown.spec.seconds;
            let deadline = now + SignedDuration::from_secs(i64::from(seconds));
            write_status(ctx, &countdown, Phase::Counting, deadline).await?;
            return Ok(Action::requeue(Duration::from_secs(u64::from(seconds))));
        };
        let left = now.duration_until(deadline);
        if left.is_positive() {
            // Nothing changes in the cluster when time passes: ask to be called again.
            return Ok(Action::requeue(left.unsigned_abs()));
        }
        write_status(ctx, &countdown, Phase::Done, deadline).await?;
        // Inside the reconcile's span: the line carries the controller, namespace and name.
        tracing::info!(%deadline, "countdown done");
        Ok(Action::await_change())
    }
}
// ANCHOR_END: reconciler

// ANCHOR: status
/// Writes the countdown's status through the `status` subresource.
async fn write_status(
    ctx: &Context<Countdown>,
    countdown: &Countdown,
    phase: Phase,
    deadline: Timestamp,
) -> Result<(), kube::Error> {
    let status = CountdownStatus {
        phase,
        deadline: deadline.to_string(),
        observed_generation: countdown.metadata.generation,
    };
    let namespace = countdown.namespace().unwrap_or_default();
    let countdowns: Api<Countdown> = Api::namespaced(ctx.client(), &namespace);
    let patch = Patch::Merge(json!({ "status": status }));
    countdowns
        .patch_status(&countdown.name_any(), &PatchParams::default(), &patch)
        .await?;
    Ok(())
}
// ANCHOR_END: status
// ANCHOR_END: file
