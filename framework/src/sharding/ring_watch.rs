//! Keeps a view of a ring's available shards, from its shard Leases, for whoever assigns.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use super::SharderMetrics;
use super::{HashRing, Shards};
use crate::informer::{Registration, SharedInformer, handler_fns};

/// The available shards of a ring and the hash ring over them, as last seen.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct View {
    pub(crate) available: BTreeSet<String>,
    pub(crate) ring: HashRing,
}

/// What the sharder and the assignment webhook read the ring from.
pub(crate) type Ring = watch::Receiver<Arc<View>>;

/// Keeps `view` up to date with the available shards of `leases`: on every Lease change, and
/// when the first available Lease would expire without renewal. Reports the number of shards
/// to `metrics` when given (the leader's sharder does; every replica's webhook view does not).
pub(crate) async fn watch_ring(
    leases: SharedInformer<Lease>,
    view: watch::Sender<Arc<View>>,
    metrics: Option<SharderMetrics>,
    shutdown: CancellationToken,
) {
    let (changed, _registration) = on_lease_change(&leases);
    let store = leases.store();
    loop {
        let shards = Shards::of(
            store.list().iter().map(AsRef::as_ref),
            Timestamp::now().as_microsecond(),
        );
        let next = View {
            ring: HashRing::new(shards.available.iter().map(String::as_str)),
            available: shards.available,
        };
        view.send_if_modified(|current| {
            if **current == next {
                return false;
            }
            tracing::info!(shards = ?next.available, "the ring's available shards changed");
            if let Some(metrics) = &metrics {
                metrics.set_shards(next.available.len());
            }
            *current = Arc::new(next);
            true
        });
        let expiry = shards.next_expiry.unwrap_or(Duration::from_secs(3600));
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = changed.notified() => {}
            // A few milliseconds after the expiry, so the Lease is past it when looked at.
            () = tokio::time::sleep(expiry + Duration::from_millis(5)) => {}
        }
    }
}

/// A notification on every change to a Lease of `leases`, while the registration is kept.
pub(super) fn on_lease_change(
    leases: &SharedInformer<Lease>,
) -> (Arc<Notify>, Registration<Lease>) {
    let changed = Arc::new(Notify::new());
    let (on_add, on_update, on_delete) = (changed.clone(), changed.clone(), changed.clone());
    let registration = leases.add_handler(
        handler_fns()
            .on_add(move |_| on_add.notify_one())
            .on_update(move |_, _| on_update.notify_one())
            .on_delete(move |_| on_delete.notify_one()),
    );
    (changed, registration)
}
