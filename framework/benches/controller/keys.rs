//! Each fast reconcile comes from a key sent on a stream, for an object already in the cache.
//!
//! Both controllers list `parked` + `FAST` ConfigMaps at start and reconcile them all once (the
//! parked ones stay in flight); then the `FAST` keys are sent on the `reconcile_on` stream and timed.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::controller::{
    Action as KrAction, Config as KrConfig, Controller as KrController,
};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kubeward::cache::ObjectKey;
use kubeward::controller::Controller;
use kubeward::manager::{Config, Manager};
use kubeward::testing::FakeApiServer;

use super::{FAST, Load, Ours, fake_with, slots, theirs};

/// Starts a controller on the fake, reconciling what the load does and what the stream names.
type Start<T> =
    Box<dyn FnOnce(FakeApiServer, Arc<Load>, UnboundedReceiver<T>) -> Box<dyn FnOnce() + Send>>;

/// Lets the initial list's reconciles finish, then times `FAST` keys made by `key`.
async fn measure<T>(parked: usize, start: Start<T>, key: impl Fn(String) -> T) -> Option<Duration> {
    let fake = fake_with(&[("parked", parked), ("fast", FAST)]);
    let load = Load::new(parked, FAST);
    let (sender, receiver) = unbounded();
    let keys: Vec<T> = (0..FAST).map(|i| key(format!("fast-{i}"))).collect();
    let warm_up = load.fast_done.notified();
    let stop = start(fake, Arc::clone(&load), receiver);
    let listed = tokio::time::timeout(super::TIMEOUT, warm_up).await.is_ok();
    let elapsed = match load.parked_in_flight().await {
        Some(()) if listed => load.time_until(2 * FAST, || send(&sender, keys)).await,
        _ => None,
    };
    load.release.cancel();
    stop();
    elapsed
}

fn send<T>(sender: &UnboundedSender<T>, keys: Vec<T>) {
    for key in keys {
        sender
            .unbounded_send(key)
            .expect("the controller is running");
    }
}

pub(super) async fn kubeward(parked: usize, concurrency: usize) -> Option<Duration> {
    let start: Start<ObjectKey> = Box::new(move |fake, load, keys| {
        let manager = Manager::new(fake.client(), Config::default());
        manager.add(
            Controller::new(Ours(load))
                .concurrency(slots(parked, concurrency))
                .reconcile_on(keys),
        );
        let token = manager.shutdown_token();
        tokio::spawn(manager.run());
        Box::new(move || token.cancel())
    });
    measure(parked, start, |name| ObjectKey::new(Some("default"), &name)).await
}

pub(super) async fn kube_runtime(parked: usize, concurrency: usize) -> Option<Duration> {
    let start: Start<ObjectRef<ConfigMap>> = Box::new(move |fake, load, keys| {
        let api: Api<ConfigMap> = Api::all(fake.client());
        let config = KrConfig::default().concurrency(slots(parked, concurrency));
        let run = KrController::new(api, watcher::Config::default())
            .with_config(config)
            .reconcile_on(keys)
            .run(theirs, |_, _, _| KrAction::await_change(), load);
        let task = tokio::spawn(run.for_each(|_| async {}));
        Box::new(move || task.abort())
    });
    measure(parked, start, |name| {
        ObjectRef::new(&name).within("default")
    })
    .await
}
