//! Records a failed reconcile as a Warning Event about the object.

use std::sync::Arc;

use kube::runtime::events::{Event, EventType};

use crate::controller::{Context, Watchable};

/// The Event's reason.
pub(super) const REASON: &str = "ReconcileError";

/// Records a Warning Event `ReconcileError` with `note` about `obj`, without waiting for it and
/// without failing: a refused Event is logged.
// The lead swaps this body for the aggregating `ctx.event(obj).warning(REASON, note)` recorder.
pub(super) fn report<K: Watchable>(ctx: &Context<K>, obj: &Arc<K>, note: String) {
    let (ctx, obj) = (ctx.clone(), Arc::clone(obj));
    tokio::spawn(async move {
        let event = Event {
            type_: EventType::Warning,
            reason: REASON.into(),
            note: Some(note),
            action: "Reconcile".into(),
            secondary: None,
        };
        if let Err(error) = ctx.publish_event(&obj, &event).await {
            tracing::warn!(%error, "could not record the ReconcileError Event");
        }
    });
}
