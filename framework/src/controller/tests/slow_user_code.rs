//! A controller's user code (predicates, mappers) runs on that controller's own task: however
//! slow, it delays no other controller on the same informer.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::mpsc as channel;

use super::start;
use crate::controller::{Action, Context, Controller, Predicate, Reconciler};
use crate::testing::FakeApiServer;

/// Reports the name and resourceVersion of every object it reconciles.
struct Recorder(channel::UnboundedSender<(String, String)>);

impl Reconciler<ConfigMap> for Recorder {
    type Error = kube::Error;

    async fn reconcile(&self, cm: Arc<ConfigMap>, _: &Context<ConfigMap>) -> kube::Result<Action> {
        let version = cm.resource_version().unwrap_or_default();
        // The receiver lives as long as the test that reads it.
        let _ = self.0.send((cm.name_any(), version));
        Ok(Action::await_change())
    }
}

/// Waits until `seen` reports a reconcile of `name` at `version`, for at most 10 s.
async fn reconciled(
    seen: &mut channel::UnboundedReceiver<(String, String)>,
    name: &str,
    version: &str,
) -> anyhow::Result<()> {
    let found = async {
        while let Some((seen_name, seen_version)) = seen.recv().await {
            if seen_name == name && seen_version == version {
                return true;
            }
        }
        false
    };
    match tokio::time::timeout(Duration::from_secs(10), found).await {
        Ok(true) => Ok(()),
        Ok(false) => anyhow::bail!("the reconciler went away before reconciling {name}"),
        Err(_) => anyhow::bail!("no reconcile of {name} at resourceVersion {version} in 10 s"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_predicate_that_blocks_delays_no_other_controller_on_the_same_informer()
-> anyhow::Result<()> {
    let fake = FakeApiServer::new();
    fake.register::<ConfigMap>();
    let api = Api::<ConfigMap>::namespaced(fake.client(), "ns");
    let cm = |name: &str| ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    api.create(&PostParams::default(), &cm("a")).await?;

    // The slow controller's predicate blocks its thread on a labelled change until the gate
    // opens: a predicate stuck in I/O, which it must never do, delaying only its own controller.
    let (open, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let (blocked_tx, mut blocked) = channel::unbounded_channel();
    let slow_predicate = Predicate::new(move |_, new: &ConfigMap| {
        if new.labels().contains_key("block") {
            let _ = blocked_tx.send(());
            let _ = gate.lock().recv();
        }
        true
    });
    let (slow_tx, mut slow_seen) = channel::unbounded_channel();
    let (fast_tx, mut fast_seen) = channel::unbounded_channel();
    let slow = start(
        &fake,
        Controller::new(Recorder(slow_tx))
            .name("slow")
            .predicate(slow_predicate),
    );
    // The second controller shares the first one's factory, and so its ConfigMap informer.
    let cluster = super::Cluster::new(Arc::clone(&slow.factory));
    let fast = Controller::new(Recorder(fast_tx))
        .name("fast")
        .bind(&cluster)
        .expect("a valid controller");
    let shutdown = tokio_util::sync::CancellationToken::new();
    let (runner, token) = (fast.clone(), shutdown.clone());
    let fast_task = tokio::spawn(async move { runner.run(token.cancelled_owned()).await });

    let created = api.get("a").await?.resource_version().unwrap_or_default();
    reconciled(&mut slow_seen, "a", &created).await?;
    reconciled(&mut fast_seen, "a", &created).await?;

    let labelled = json!({ "metadata": { "labels": { "block": "yes" } } });
    let patched = api
        .patch("a", &PatchParams::default(), &Patch::Merge(&labelled))
        .await?;
    tokio::time::timeout(Duration::from_secs(10), blocked.recv())
        .await?
        .ok_or_else(|| anyhow::anyhow!("the slow predicate never ran"))?;
    // While the slow predicate blocks, the other controller reconciles this change and a newer
    // object: the informer's task and its lock are not held by the slow one.
    let version = patched.resource_version().unwrap_or_default();
    reconciled(&mut fast_seen, "a", &version).await?;
    let b = api.create(&PostParams::default(), &cm("b")).await?;
    reconciled(
        &mut fast_seen,
        "b",
        &b.resource_version().unwrap_or_default(),
    )
    .await?;
    assert!(
        slow_seen.try_recv().is_err(),
        "the slow controller reconciled nothing while its predicate was blocked"
    );

    drop(open);
    reconciled(&mut slow_seen, "a", &version).await?;
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(10), fast_task).await???;
    slow.stop().await;
    Ok(())
}
