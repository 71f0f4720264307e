//! Sets the controller's condition `Unknown` on an object that lacks it, unless the reconcile
//! wrote the object's status itself.

use std::cell::Cell;
use std::future::Future;

use super::condition::{self, Report};
use super::reporting::INITIAL_REASON;
use super::{Action, Cacheable, Context};

tokio::task_local! {
    /// Whether the reconcile running on this task wrote (or checked) its object's status
    /// through the reconcile kit.
    static STATUS_WRITTEN: Cell<bool>;
}

/// Notes that the running reconcile wrote its object's status through the kit, which sets the
/// condition's first state in that write; outside a reconcile it does nothing.
pub(crate) fn note_status_written() {
    let _ = STATUS_WRITTEN.try_with(|written| written.set(true));
}

/// Runs `attempt` at `obj`; when it succeeds without writing the status through the kit, and
/// `obj` (not being deleted) lacks the controller's condition, sets it `Unknown` with reason
/// `Reconciling` (controller-runtime authors write this by hand). Never fails: what cannot be
/// written is logged.
pub(crate) async fn settle<K: Cacheable, E>(
    ctx: &Context<K>,
    obj: &K,
    attempt: impl Future<Output = Result<Action, E>>,
) -> Result<Action, E> {
    let (result, written) = STATUS_WRITTEN
        .scope(Cell::new(false), async {
            let result = attempt.await;
            (result, STATUS_WRITTEN.with(Cell::get))
        })
        .await;
    let reporting = ctx.reporting();
    let deleting = obj.meta().deletion_timestamp.is_some();
    if result.is_err() || written || deleting || !reporting.starts_unknown(ctx.kind()) {
        return result;
    }
    let Some(to_json) = ctx.to_json() else {
        return result;
    };
    let report = Report {
        condition: &reporting.condition,
        status: "Unknown",
        reason: INITIAL_REASON,
        message: "",
        only_if_missing: true,
        observes: true,
    };
    condition::write(
        ctx.client(),
        ctx.kind(),
        ctx.own_writes(),
        to_json,
        obj,
        &report,
    )
    .await;
    result
}
