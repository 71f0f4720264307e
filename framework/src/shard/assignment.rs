//! Serves a shard's assignment webhooks: every replica keeps a view of its ring's shards and
//! labels the ring's objects for their shard as they are created.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::informer::SharedInformer;
use crate::manager::{Error, Manager, RunsOn, runnable_fn};
use crate::sharding::{KindSharder, Ring, SharderMetrics, View, watch_ring};

/// The ring's assignment webhooks: the view of the ring they read, and the kinds served.
pub(super) struct Assignment {
    view: Ring,
    metrics: SharderMetrics,
    namespaces: LabelSelector,
    /// The group and kind of each webhook added.
    served: Mutex<BTreeSet<String>>,
}

impl Assignment {
    /// The assignment of `ring`, with the runnable that keeps its view of the ring's shard
    /// `leases` added to `manager`, when the webhook server can serve; else none (the sharder
    /// alone assigns).
    ///
    /// # Errors
    /// What [`Manager::add`] returns.
    pub(super) fn new(
        manager: &Manager,
        ring: &str,
        leases: &SharedInformer<Lease>,
    ) -> Result<Option<Self>, Error> {
        if !manager.config().webhook.can_serve() {
            return Ok(None);
        }
        let (tx, rx) = watch::channel(Arc::new(View::default()));
        let leases = leases.clone();
        manager.add(runnable_fn(
            format!("shard view {ring}"),
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
        ))?;
        Ok(Some(Self {
            view: rx,
            metrics: SharderMetrics::new(manager.metrics(), ring),
            namespaces: namespace_selector(manager.config().cache_scope().watched_namespaces()),
            served: Mutex::default(),
        }))
    }

    /// Adds the assignment webhook of each of `kinds` of `ring` not served yet, the main kind
    /// first: an object of it is keyed by its own name.
    ///
    /// # Errors
    /// [`Error::DuplicatePath`] when a webhook of yours has an assignment webhook's path.
    pub(super) fn add_webhooks(
        &self,
        manager: &Manager,
        ring: &str,
        kinds: &[KindSharder],
    ) -> Result<(), Error> {
        let (main, owned): (Vec<&KindSharder>, Vec<_>) = kinds.iter().partition(|k| k.is_main());
        for kind in main.into_iter().chain(owned) {
            if self.served.lock().insert(kind.group_kind()) {
                let webhook = kind.admission(ring, self.view.clone(), self.metrics.clone());
                manager.add_webhook(webhook.namespace_selector(self.namespaces.clone()))?;
            }
        }
        Ok(())
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
