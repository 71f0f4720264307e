//! Settles a failed reconcile: requeues or forgets the key, and reports the error on the object.

mod event;

use std::sync::Arc;

pub(crate) use super::condition::ToJson;
pub(crate) use super::reporting::Reporting;

use super::condition;
use super::erased::{Failure, Next};
use super::error::{api_status, truncate};
use super::{Cacheable, Context, ErrorAction};
use crate::cache::ObjectKey;
use crate::error::chain;
use crate::informer::connectivity::{self, Connectivity};
use crate::metrics::Outcome;
use crate::queue::WorkQueue;

/// events.k8s.io/v1 refuses an Event whose note is longer than 1 KiB.
const NOTE_LIMIT: usize = 1024;
/// `metav1.Condition` allows messages up to 32 KiB.
const MESSAGE_LIMIT: usize = 32 * 1024;
/// The condition's reason when the error is not an API error with a reason of its own.
const CONDITION_REASON: &str = "ReconcileError";

/// Requeues or forgets `key` as `failure` asks, logs it, and says how it counts.
///
/// A conflict goes through the rate limiter: its first retry of a key comes after the limiter's
/// base delay (5 ms by default), and the watch event of the newer version, which is what the
/// retry needs, adds the key at once anyway. A plain `add` would instead spin at full speed for
/// as long as a reconciler keeps writing from a stale read.
pub(crate) fn settle(queue: &WorkQueue<ObjectKey>, key: &ObjectKey, failure: &Failure) -> Outcome {
    let error = chain(&*failure.error);
    match failure.next {
        Next::Conflict => {
            tracing::debug!(%error, step = failure.step, "conflict: the object changed; looking again");
            queue.add_rate_limited(key.clone());
            Outcome::Requeue
        }
        Next::Policy(action) => {
            let terminal = action == ErrorAction::Terminal;
            tracing::warn!(%error, step = failure.step, terminal, "reconcile failed");
            match action {
                ErrorAction::Retry => queue.add_rate_limited(key.clone()),
                ErrorAction::RetryAfter(delay) => queue.add_after(key.clone(), delay),
                // Not retried: the informer brings the key back when the object changes.
                ErrorAction::Terminal => queue.forget(key),
            }
            Outcome::Error { terminal }
        }
    }
}

/// Whether `failure` is the API server not answering while `connectivity` knows it is down (the
/// informers or the elector saw it too), and the error policy retries: then reporting it on the
/// object cannot succeed, and a retry before the server is back only adds noise.
pub(crate) fn is_outage(connectivity: &Connectivity, failure: &Failure) -> bool {
    matches!(
        failure.next,
        Next::Policy(ErrorAction::Retry | ErrorAction::RetryAfter(_))
    ) && connectivity.is_unreachable()
        && connectivity::is_unreachable_in(&*failure.error)
}

/// Requeues `key`, whose reconcile failed for an outage ([`is_outage`]), once the API server is
/// reachable again, rate limited; meanwhile it counts among the reconciles that wait, which the
/// outage's log lines report. Nothing is logged per key, and nothing reported on the object.
pub(crate) fn wait_for_server(
    queue: &WorkQueue<ObjectKey>,
    key: &ObjectKey,
    connectivity: &Connectivity,
    failure: &Failure,
) -> Outcome {
    let error = chain(&*failure.error);
    tracing::debug!(%error, step = failure.step, "reconcile failed: the API server is unreachable; retrying once it is back");
    let back = connectivity.until_reachable();
    let (queue, key) = (queue.clone(), key.clone());
    // Adding to a queue that shut down meanwhile does nothing.
    tokio::spawn(async move {
        back.await;
        queue.add_rate_limited(key);
    });
    Outcome::Error { terminal: false }
}

/// Reports `failure` on `obj` as `reporting` says, through the controller's `ctx`: a Warning
/// Event, and for a custom resource (read by `to_json`) its condition (`Ready` unless the
/// controller names another) False with the API error's reason (`Invalid`, `Forbidden`, ...) or
/// `ReconcileError`. Conflicts are not reported. Never fails: what cannot be written is logged.
pub(crate) async fn report<K: Cacheable>(
    ctx: &Context<K>,
    reporting: &Reporting,
    to_json: ToJson<K>,
    obj: &Arc<K>,
    failure: &Failure,
) {
    if failure.next == Next::Conflict {
        return;
    }
    let text = chain(&*failure.error);
    if reporting.events {
        event::report(ctx, obj, truncate(&text, NOTE_LIMIT));
    }
    if reporting.keeps_condition(ctx.kind()) {
        let reason = api_status(&*failure.error)
            .map(|s| s.reason.as_str())
            .filter(|r| is_reason(r))
            .unwrap_or(CONDITION_REASON);
        let message = truncate(&text, MESSAGE_LIMIT);
        let report = condition::Report {
            condition: &reporting.condition,
            status: "False",
            reason,
            message: &message,
            only_if_missing: false,
            observes: true,
        };
        condition::write(
            ctx.client(),
            ctx.kind(),
            ctx.own_writes(),
            to_json,
            obj.as_ref(),
            &report,
        )
        .await;
    }
}

/// Whether `reason` is a valid `metav1.Condition` reason (CamelCase: a letter, then letters,
/// digits, `_`, `,` or `:`, not ending in `,` or `:`).
fn is_reason(reason: &str) -> bool {
    reason.len() <= 1024
        && reason.starts_with(|c: char| c.is_ascii_alphabetic())
        && reason
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ',' | ':'))
        && !reason.ends_with([',', ':'])
}
