//! Each fast reconcile comes from the watch event of a freshly created ConfigMap.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::controller::{
    Action as KrAction, Config as KrConfig, Controller as KrController,
};
use kube::runtime::watcher;
use kubeward::controller::Controller;
use kubeward::manager::{Config, Manager};
use kubeward::testing::FakeApiServer;

use super::{FAST, Load, Ours, fake_with, seed, slots, theirs};

/// Parks `parked` reconciles, then times `FAST` fresh ones; `start` runs the controller.
async fn measure(
    parked: usize,
    start: impl FnOnce(FakeApiServer, Arc<Load>) -> Box<dyn FnOnce() + Send>,
) -> Option<Duration> {
    let fake = fake_with(&[("parked", parked)]);
    let load = Load::new(parked, FAST);
    let stop = start(fake.clone(), Arc::clone(&load));
    let elapsed = match load.parked_in_flight().await {
        Some(()) => load.time_until(FAST, || seed(&fake, "fast", FAST)).await,
        None => None,
    };
    load.release.cancel();
    stop();
    elapsed
}

pub(super) async fn kubeward(parked: usize, concurrency: usize) -> Option<Duration> {
    measure(parked, move |fake, load| {
        let manager = Manager::new(fake.client(), Config::default());
        manager.add(Controller::new(Ours(load)).concurrency(slots(parked, concurrency)));
        let token = manager.shutdown_token();
        tokio::spawn(manager.run());
        Box::new(move || token.cancel())
    })
    .await
}

pub(super) async fn kube_runtime(parked: usize, concurrency: usize) -> Option<Duration> {
    measure(parked, move |fake, load| {
        let api: Api<ConfigMap> = Api::all(fake.client());
        let config = KrConfig::default().concurrency(slots(parked, concurrency));
        let run = KrController::new(api, watcher::Config::default())
            .with_config(config)
            .run(theirs, |_, _, _| KrAction::await_change(), load);
        let task = tokio::spawn(run.for_each(|_| async {}));
        Box::new(move || task.abort())
    })
    .await
}
