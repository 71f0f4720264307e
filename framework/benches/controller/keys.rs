//! Each fast reconcile comes from a key sent on a stream, for an object already in the cache.
//!
//! Both controllers list `parked` + `FAST` ConfigMaps at start and reconcile them all once (the
//! parked ones stay in flight); then the `FAST` keys are sent on the `reconcile_on` stream and timed.

use std::sync::Arc;

use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::reflector::ObjectRef;
use kubeward::cache::ObjectKey;
use kubeward::testing::FakeApiServer;

use super::{Load, Stop, fake_with, fast, slots, start_ours, start_theirs};

/// Starts a controller on the fake, reconciling what the load does and what the stream names.
type Start<T> = Box<dyn FnOnce(FakeApiServer, Arc<Load>, UnboundedReceiver<T>) -> Stop>;

/// Lets the initial list's reconciles finish, then times `FAST` keys made by `key`.
async fn measure<T>(
    parked: usize,
    start: Start<T>,
    key: impl Fn(String) -> T,
) -> Option<super::Timed> {
    let fake = fake_with(&[("parked", parked), ("fast", fast())]);
    let load = Load::new(parked, fast());
    let (sender, receiver) = unbounded();
    let keys: Vec<T> = (0..fast()).map(|i| key(format!("fast-{i}"))).collect();
    let warm_up = load.fast_done.notified();
    let stop = start(fake, Arc::clone(&load), receiver);
    let listed = tokio::time::timeout(super::TIMEOUT, warm_up).await.is_ok();
    let elapsed = match load.parked_in_flight().await {
        Some(()) if listed => load.time_until(2 * fast(), || send(&sender, keys)).await,
        _ => None,
    };
    load.release.cancel();
    stop.wait().await;
    elapsed
}

fn send<T>(sender: &UnboundedSender<T>, keys: Vec<T>) {
    for key in keys {
        sender
            .unbounded_send(key)
            .expect("the controller is running");
    }
}

pub(super) async fn kubeward(parked: usize, concurrency: usize) -> Option<super::Timed> {
    let slots = slots(parked, concurrency);
    let start: Start<ObjectKey> =
        Box::new(move |fake, load, keys| start_ours(&fake, load, slots, |c| c.reconcile_on(keys)));
    measure(parked, start, |name| ObjectKey::new(Some("default"), &name)).await
}

pub(super) async fn kube_runtime(parked: usize, concurrency: usize) -> Option<super::Timed> {
    let slots = slots(parked, concurrency);
    let start: Start<ObjectRef<ConfigMap>> = Box::new(move |fake, load, keys| {
        start_theirs(&fake, load, slots, |c| c.reconcile_on(keys))
    });
    measure(parked, start, |name| {
        ObjectRef::new(&name).within("default")
    })
    .await
}
