//! Records a failed reconcile as a Warning Event about the object.

use std::sync::Arc;

use crate::controller::{Cacheable, Context};

/// The Event's reason.
pub(super) const REASON: &str = "ReconcileError";

/// Records a Warning Event `ReconcileError` with `note` about `obj`, without waiting for it and
/// without failing; repeats of one message are counted in one Event (see [`crate::events`]).
pub(super) fn report<K: Cacheable>(ctx: &Context<K>, obj: &Arc<K>, note: String) {
    ctx.event(obj).action("Reconcile").warning(REASON, note);
}
