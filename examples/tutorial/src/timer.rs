// ANCHOR: file
//! Reconciles a `Countdown`: starts it, and finishes it once its deadline has passed.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kubeward::prelude::*;

use crate::{Countdown, CountdownStatus, Phase};

// ANCHOR: reconciler
/// The reconciler of `Countdown`s. It holds nothing: the client comes from the [`Context`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Timer;

impl Reconciler<Countdown> for Timer {
    type Error = kubeward::Error;

    async fn reconcile(
        &self,
        countdown: Arc<Countdown>,
        ctx: &Context<Countdown>,
    ) -> Result<Action, kubeward::Error> {
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
            ctx.patch_status(&countdown, &status_of(Phase::Counting, deadline))
                .await?;
            return Ok(Action::requeue(Duration::from_secs(u64::from(seconds))));
        };
        let left = now.duration_until(deadline);
        if left.is_positive() {
            // Nothing changes in the cluster when time passes: ask to be called again.
            return Ok(Action::requeue(left.unsigned_abs()));
        }
        ctx.patch_status(&countdown, &status_of(Phase::Done, deadline))
            .await?;
        // Inside the reconcile's span: the line carries the controller, namespace and name.
        tracing::info!(%deadline, "countdown done");
        Ok(Action::await_change())
    }
}
// ANCHOR_END: reconciler

// ANCHOR: status
/// The status for `phase` and `deadline`; `ctx.patch_status` fills in the generation it
/// describes (the one of the countdown it writes) and writes only when it differs.
fn status_of(phase: Phase, deadline: Timestamp) -> CountdownStatus {
    CountdownStatus {
        phase,
        deadline: deadline.to_string(),
        observed_generation: None,
    }
}
// ANCHOR_END: status
// ANCHOR_END: file
