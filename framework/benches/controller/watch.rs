//! Each fast reconcile comes from the watch event of a freshly created ConfigMap; the objects
//! are made while the watch is paused, and the clock runs from its resumption.

use std::sync::Arc;

use kubeward::testing::FakeApiServer;

use super::{Load, Stop, TIMEOUT, fake_with, fast, seed, slots, start_ours, start_theirs};

/// Parks `parked` reconciles, then times `FAST` fresh ones; `start` runs the controller.
pub(super) async fn measure(
    parked: usize,
    start: impl FnOnce(&FakeApiServer, Arc<Load>) -> Stop,
) -> Option<super::Timed> {
    let fake = fake_with(&[("parked", parked)]);
    let load = Load::new(parked, fast());
    let stop = start(&fake, Arc::clone(&load));
    let elapsed = match load.parked_in_flight().await {
        // The fast objects are made while the watch is held back, before the clock starts.
        Some(()) if watching(&fake).await => {
            fake.pause_watches();
            seed(&fake, "fast", fast());
            load.time_until(fast(), || fake.resume_watches()).await
        }
        _ => None,
    };
    load.release.cancel();
    stop.wait().await;
    elapsed
}

/// Waits until the controller's watch is open; `false` if it does not open in time.
async fn watching(fake: &FakeApiServer) -> bool {
    kubeward::testing::wait_for(TIMEOUT, "the controller's watch", || {
        let open = fake.open_watches() > 0;
        async move { open.then_some(()) }
    })
    .await
    .is_ok()
}

pub(super) async fn kubeward(parked: usize, concurrency: usize) -> Option<super::Timed> {
    let slots = slots(parked, concurrency);
    measure(parked, |fake, load| start_ours(fake, load, slots, |c| c)).await
}

pub(super) async fn kube_runtime(parked: usize, concurrency: usize) -> Option<super::Timed> {
    let slots = slots(parked, concurrency);
    measure(parked, |fake, load| start_theirs(fake, load, slots, |c| c)).await
}
