//! What every example operator's simulation does: run its controller on the simulated API
//! server while a workload writes under the seed's faults, then stop the faults, wait for the
//! fixed point and for the stored objects to calm, and reconcile every object once more in a
//! pass that must write nothing.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kubeward::cache::ObjectKey;
use kubeward::controller::{Cluster, Controller};
use kubeward::informer::{Cacheable, Factory};
use kubeward::testing::sim::World;
use tokio::sync::{mpsc, oneshot};

/// Runs `controller` while `workload` runs; then, faults stopped, waits up to five virtual
/// minutes for `fixed_point`, lets the store calm for 2 s, and reconciles each of `keys()` (what
/// is left then) in a 30 s quiet pass. The world's violations say what went wrong.
pub(crate) async fn converge_and_rest<K: Cacheable>(
    world: &World,
    controller: Controller<K>,
    workload: impl Future<Output = ()>,
    fixed_point: impl Fn() -> Result<(), String>,
    keys: impl FnOnce() -> Vec<ObjectKey>,
) {
    let (again, reconcile_on) = mpsc::unbounded_channel::<ObjectKey>();
    let requested = futures::stream::poll_fn({
        let mut keys = reconcile_on;
        move |cx| keys.poll_recv(cx)
    });
    let factory = Arc::new(Factory::new(world.client("operator")));
    let bound = controller
        .reconcile_on(requested.boxed())
        .bind(&Cluster::new(Arc::clone(&factory)))
        .expect("a valid controller");
    let (shutdown, stop) = oneshot::channel::<()>();
    let running = tokio::spawn(async move {
        bound
            .run(async {
                let _ = stop.await;
            })
            .await
    });
    workload.await;
    world.stop_faults();
    if world.settle(Duration::from_secs(300), fixed_point).await {
        world.calm(Duration::from_secs(2)).await;
        for key in keys() {
            // The receiver lives as long as the controller.
            let _ = again.send(key);
        }
        world.quiet(Duration::from_secs(30)).await;
    }
    let _ = shutdown.send(());
    let stopped = tokio::time::timeout(Duration::from_secs(60), running).await;
    assert!(
        matches!(stopped, Ok(Ok(Ok(())))),
        "the controller stops cleanly within 60 s: {stopped:?}"
    );
    factory.shutdown().await;
}

/// Writes until a write is not refused by a fault; a create whose answer was lost counts once it
/// answers `AlreadyExists`, a delete once it answers `NotFound`.
pub(crate) async fn until_written<T>(mut write: impl AsyncFnMut() -> kube::Result<T>) {
    loop {
        match write().await {
            Ok(_) => return,
            Err(kube::Error::Api(status))
                if status.reason == "AlreadyExists" || status.reason == "NotFound" =>
            {
                return;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}
