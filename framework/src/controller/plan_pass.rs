//! Reconciles every cached object of a bound controller once, without a queue: a plan's pass.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use tracing::Instrument as _;

use super::pause::is_paused;
use super::running::wait_for_caches;
use super::{Bound, Cacheable};
use crate::cache::ObjectKey;
use crate::informer::selector::labels_match;

/// What one controller's pass did.
#[derive(Debug, Default)]
pub(crate) struct Pass {
    /// Objects reconciled.
    pub(crate) reconciled: usize,
    /// Objects left alone because they are paused.
    pub(crate) paused: usize,
    /// Objects whose reconcile failed, as `namespace/name`, with the error and its causes.
    pub(crate) failed: Vec<(String, String)>,
}

/// Why a pass could not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PassError {
    /// The label selector does not parse.
    #[error("label selector {selector:?}: {reason}")]
    Selector { selector: String, reason: String },
    /// An informer could not start or sync.
    #[error("waiting for the caches")]
    Caches(#[source] crate::informer::Error),
    /// The caches did not sync in time.
    #[error("the caches did not hold their first list within {0:?}")]
    SyncTimeout(Duration),
}

impl<K: Cacheable> Bound<K> {
    /// Starts the informers, waits (at most `sync_timeout`) until the caches of the controller's
    /// kind and of what it owns and watches hold their first list, then reconciles each cached
    /// object whose labels `selector` selects once, with the controller's concurrency, paused
    /// objects left alone. No queue is opened, so no change seen meanwhile queues anything;
    /// there are no retries and no failure reports.
    pub(crate) async fn reconcile_each_once(
        &self,
        selector: Option<&str>,
        sync_timeout: Duration,
    ) -> Result<Pass, PassError> {
        let wiring = &self.wiring;
        wiring.factory.start().map_err(PassError::Caches)?;
        tokio::time::timeout(
            sync_timeout,
            wait_for_caches(&wiring.informer, &wiring.wired),
        )
        .await
        .map_err(|_| PassError::SyncTimeout(sync_timeout))?
        .map_err(PassError::Caches)?;
        let store = wiring.informer.store();
        let mut pass = Pass::default();
        let mut chosen = Vec::new();
        for key in store.keys() {
            let Some(obj) = store.get(&key) else { continue };
            let labels = obj.meta().labels.clone().unwrap_or_default();
            let selected = labels_match(selector.unwrap_or_default(), &labels).map_err(|e| {
                PassError::Selector {
                    selector: selector.unwrap_or_default().to_owned(),
                    reason: e.to_string(),
                }
            })?;
            if !selected {
                continue;
            }
            if is_paused(obj.meta()) {
                pass.paused += 1;
                continue;
            }
            chosen.push((key, obj));
        }
        let shared = &wiring.shared;
        let mut attempts = futures::stream::iter(chosen)
            .map(|(key, obj): (ObjectKey, Arc<K>)| {
                let span = tracing::info_span!(
                    "plan",
                    controller = shared.ctx.name(),
                    namespace = key.namespace().unwrap_or_default(),
                    object = key.name(),
                );
                let attempt = shared.reconciler.run(obj, &shared.ctx, shared.timeout);
                async move { (key, attempt.await) }.instrument(span)
            })
            .buffer_unordered(usize::from(wiring.concurrency.max(1)));
        while let Some((key, outcome)) = attempts.next().await {
            pass.reconciled += 1;
            if let Err(failure) = outcome {
                pass.failed.push((key.to_string(), chain(&*failure.error)));
            }
        }
        Ok(pass)
    }
}

/// An error and its causes, `: `-separated.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
