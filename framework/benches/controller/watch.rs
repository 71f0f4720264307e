//! Each fast reconcile comes from the watch event of a freshly created ConfigMap.

use std::sync::Arc;
use std::time::Duration;

use kubeward::testing::FakeApiServer;

use super::{Load, Stop, fake_with, fast, seed, slots, start_ours, start_theirs};

/// Parks `parked` reconciles, then times `FAST` fresh ones; `start` runs the controller.
async fn measure(
    parked: usize,
    start: impl FnOnce(&FakeApiServer, Arc<Load>) -> Stop,
) -> Option<Duration> {
    let fake = fake_with(&[("parked", parked)]);
    let load = Load::new(parked, fast());
    let stop = start(&fake, Arc::clone(&load));
    let elapsed = match load.parked_in_flight().await {
        Some(()) => {
            load.time_until(fast(), || seed(&fake, "fast", fast()))
                .await
        }
        None => None,
    };
    load.release.cancel();
    stop();
    elapsed
}

pub(super) async fn kubeward(parked: usize, concurrency: usize) -> Option<Duration> {
    let slots = slots(parked, concurrency);
    measure(parked, |fake, load| start_ours(fake, load, slots, |c| c)).await
}

pub(super) async fn kube_runtime(parked: usize, concurrency: usize) -> Option<Duration> {
    let slots = slots(parked, concurrency);
    measure(parked, |fake, load| start_theirs(fake, load, slots, |c| c)).await
}
