//! Faults on the real control plane: nothing is lost, nothing runs twice at once, the process lives.
//!
//! The CI profile restarts kube-apiserver 3 times; `KUBEWARD_RELIABILITY_RESTARTS=10` runs the
//! full profile the issue describes.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::manager::{Config, Manager};
use kubeward::testing::ControlPlane;
use kubeward_tests::wait_for;
use parking_lot::Mutex;

/// Records overlapping reconciles and the last resourceVersion reconciled per object.
#[derive(Clone, Default)]
struct Witness {
    in_flight: Arc<Mutex<HashSet<String>>>,
    overlaps: Arc<Mutex<Vec<String>>>,
    reconciled: Arc<Mutex<HashMap<String, String>>>,
}

impl Reconciler<ConfigMap> for Witness {
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _ctx: &Context<ConfigMap>,
    ) -> Result<Action, Self::Error> {
        let name = cm.name_any();
        if !self.in_flight.lock().insert(name.clone()) {
            self.overlaps.lock().push(name.clone());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
        self.reconciled
            .lock()
            .insert(name.clone(), cm.resource_version().unwrap_or_default());
        self.in_flight.lock().remove(&name);
        Ok(Action::await_change())
    }
}

fn restarts() -> usize {
    std::env::var("KUBEWARD_RELIABILITY_RESTARTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apiserver_killed_and_restarted_while_objects_change_loses_nothing() -> anyhow::Result<()> {
    let mut cp = ControlPlane::start().await?;
    let ns = cp.create_namespace("restarts").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    for i in 0..30 {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("cm-{i}")),
                ..ObjectMeta::default()
            },
            data: Some([("n".to_owned(), "0".to_owned())].into()),
            ..ConfigMap::default()
        };
        api.create(&PostParams::default(), &cm).await?;
    }

    let witness = Witness::default();
    let manager = Manager::new(cp.client(), Config::default().namespace(Some(ns.clone())));
    let cache = manager
        .factory()
        .namespaced_informer::<ConfigMap>(&ns)
        .store();
    manager.add(
        Controller::new(witness.clone())
            .name("restarts")
            .concurrency(4),
    );
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());

    // A writer keeps changing objects; its writes fail while the apiserver is down, and that is fine.
    let writing = Arc::new(AtomicBool::new(true));
    let writer = {
        let (api, writing) = (api.clone(), Arc::clone(&writing));
        tokio::spawn(async move {
            let mut round = 0_u64;
            while writing.load(Ordering::SeqCst) {
                round += 1;
                let patch = serde_json::json!({ "data": { "n": round.to_string() } });
                let name = format!("cm-{}", round % 30);
                let _ = api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };

    for restart in 1..=restarts() {
        tokio::time::sleep(Duration::from_millis(500)).await; // let changes flow between faults
        cp.restart_apiserver().await?;
        assert!(!run.is_finished(), "the manager died at restart {restart}");
    }
    writing.store(false, Ordering::SeqCst);
    writer.await?;

    let server: HashMap<String, String> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|cm| (cm.name_any(), cm.resource_version().unwrap_or_default()))
        .collect();
    wait_for(
        Duration::from_secs(60),
        "the cache to equal the server and every last change to be reconciled",
        || async {
            let cached: HashMap<String, String> = cache
                .list()
                .iter()
                .map(|cm| (cm.name_any(), cm.resource_version().unwrap_or_default()))
                .collect();
            let reconciled = witness.reconciled.lock().clone();
            (cached == server
                && server
                    .iter()
                    .all(|(name, rv)| reconciled.get(name) == Some(rv)))
            .then_some(())
        },
    )
    .await?;
    assert!(
        witness.overlaps.lock().is_empty(),
        "concurrent reconciles of one key: {:?}",
        witness.overlaps.lock()
    );
    assert!(!run.is_finished(), "the manager is still running");
    token.cancel();
    tokio::time::timeout(Duration::from_secs(30), run).await???;
    Ok(())
}
