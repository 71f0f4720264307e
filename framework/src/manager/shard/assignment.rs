//! Serves a shard's assignment webhooks: every replica keeps a view of its ring's shards and
//! labels the ring's objects for their shard as they are created.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use tokio::sync::watch;

use crate::informer::SharedInformer;
use crate::manager::{Error, Manager, Runnable, RunsOn, runnable_fn};
use crate::sharding::{KindSharder, SharderMetrics, View, watch_ring};

impl Manager {
    /// Adds the assignment webhook of each of `kinds` (once per kind) of `ring`, and returns the
    /// runnable that keeps their view of the ring's shard `leases`, when the webhook server can
    /// serve; else nothing (the sharder alone assigns).
    ///
    /// # Errors
    /// [`Error::DuplicatePath`] when a webhook of yours has an assignment webhook's path.
    pub(in crate::manager) fn assign_at_creation(
        &self,
        ring: &str,
        leases: &SharedInformer<Lease>,
        kinds: &[KindSharder],
    ) -> Result<Option<Box<dyn Runnable>>, Error> {
        if !self.config().webhook.can_serve() {
            return Ok(None);
        }
        let (tx, rx) = watch::channel(Arc::new(View::default()));
        let namespaces = namespace_selector(self.config().cache_scope().watched_namespaces());
        let metrics = SharderMetrics::new(self.metrics(), ring);
        let mut seen = BTreeSet::new();
        // A ring's main kind first: an object of it is keyed by its own name.
        let (main, owned): (Vec<&KindSharder>, Vec<_>) = kinds.iter().partition(|k| k.is_main());
        for kind in main.into_iter().chain(owned) {
            if seen.insert(kind.group_kind()) {
                let webhook = kind.admission(ring, rx.clone(), metrics.clone());
                self.add_webhook(webhook.namespace_selector(namespaces.clone()))?;
            }
        }
        let leases = leases.clone();
        let name = format!("shard view {ring}");
        Ok(Some(Box::new(runnable_fn(
            name,
            RunsOn::EveryReplica,
            move |shutdown| async move {
                leases.start()?;
                // Until the Leases are listed the view is empty and the webhook admits objects
                // unlabelled, for the sharder to assign.
                tokio::select! {
                    synced = leases.wait_for_sync() => synced?,
                    () = shutdown.cancelled() => return Ok(()),
                }
                watch_ring(leases, tx, None, shutdown).await;
                Ok(())
            },
        ))))
    }
}

/// The namespaces whose objects go to the assignment webhooks: those the operator watches,
/// else all but `kube-system` (by the `kubernetes.io/metadata.name` label, which API servers
/// from 1.21 on set; a namespace without it is not in a set, and not `kube-system`).
fn namespace_selector<'a>(watched: impl Iterator<Item = &'a str>) -> LabelSelector {
    let watched: Vec<String> = watched.map(str::to_owned).collect();
    let (operator, values) = if watched.is_empty() {
        ("NotIn", vec!["kube-system".to_owned()])
    } else {
        ("In", watched)
    };
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "kubernetes.io/metadata.name".into(),
            operator: operator.into(),
            values: Some(values),
        }]),
        match_labels: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_webhooks_see_the_watched_namespaces_or_all_but_kube_system() {
        let some = serde_json::to_value(namespace_selector(["a", "b"].into_iter())).unwrap();
        assert_eq!(
            some["matchExpressions"][0],
            serde_json::json!({"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a", "b"]})
        );
        let all = serde_json::to_value(namespace_selector(std::iter::empty())).unwrap();
        assert_eq!(all["matchExpressions"][0]["operator"], "NotIn");
        assert_eq!(
            all["matchExpressions"][0]["values"],
            serde_json::json!(["kube-system"])
        );
    }
}
