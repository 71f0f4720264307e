//! Hands an object back to the sharder when asked: a shard's reconciler behind the drain label.
//!
//! The sharder moves an object away from a live shard by setting the ring's drain label. The
//! shard's queue never runs two reconciles of one key at once, so when this wrapper sees the
//! label, no reconcile of the object is in flight: it removes the shard and drain labels
//! (guarded by the resourceVersion it saw, so a concurrent change is looked at again) and does
//! not reconcile. The object then leaves the shard's label-selected cache, and the sharder
//! assigns it to its new shard.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kube::api::{Patch, PatchParams};
use kube::core::Request;

use super::erased::{ErasedReconciler, Failure, Next};
use super::error::is_conflict;
use super::{Action, Cacheable, Context, ErrorAction};
use crate::sharding::{drain_label, shard_label};

/// A shard's reconciler: drains objects the sharder asks back, reconciles the others.
pub(crate) struct Draining<K> {
    pub(crate) inner: Arc<dyn ErasedReconciler<K>>,
    pub(crate) shard_label: String,
    pub(crate) drain_label: String,
}

impl<K> Draining<K> {
    /// `inner`, for the shards of `ring`.
    pub(crate) fn new(inner: Arc<dyn ErasedReconciler<K>>, ring: &str) -> Self {
        Self {
            inner,
            shard_label: shard_label(ring),
            drain_label: drain_label(ring),
        }
    }
}

impl<K: Cacheable> ErasedReconciler<K> for Draining<K> {
    fn run<'a>(
        &'a self,
        obj: Arc<K>,
        ctx: &'a Context<K>,
        timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<Action, Failure>> {
        let draining = obj
            .meta()
            .labels
            .as_ref()
            .is_some_and(|labels| labels.contains_key(&self.drain_label));
        if !draining {
            return self.inner.run(obj, ctx, timeout);
        }
        Box::pin(async move {
            self.hand_back(obj.as_ref(), ctx).await.map_err(|error| {
                let next = if is_conflict(&error) {
                    Next::Conflict
                } else {
                    Next::Policy(ErrorAction::Retry)
                };
                Failure {
                    error: Box::new(error),
                    step: "drain",
                    next,
                }
            })?;
            tracing::debug!(object = %crate::cache::ObjectKey::of(obj.as_ref()), "drained: handed back to the sharder");
            Ok(Action::await_change())
        })
    }
}

impl<K> Draining<K> {
    /// Removes the shard and drain labels of `obj`, if it is still at the version seen.
    async fn hand_back<C: Cacheable>(&self, obj: &C, ctx: &Context<C>) -> Result<(), kube::Error> {
        let meta = obj.meta();
        let labels: BTreeMap<&str, Option<&str>> = [
            (self.shard_label.as_str(), None),
            (self.drain_label.as_str(), None),
        ]
        .into();
        let patch = serde_json::json!({
            "metadata": { "resourceVersion": meta.resource_version, "labels": labels }
        });
        let name = meta.name.as_deref().unwrap_or_default();
        let request = Request::new(ctx.kind().url_path(meta.namespace.as_deref()))
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .map_err(kube::Error::BuildRequest)?;
        ctx.client().request_text(request).await.map(drop)
    }
}
