//! Keeps changing ConfigMaps at a steady rate while faults happen; pauses for the checks.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kubeward::testing::wait_for;
use tokio::sync::{OwnedRwLockWriteGuard, RwLock};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Lanes of writers patching disjoint subsets of the objects; failed writes (the apiserver is
/// down, the network is cut) are skipped and not counted.
#[derive(Debug)]
pub(super) struct Writer {
    lanes: JoinSet<()>,
    gate: Arc<RwLock<()>>,
    stop: CancellationToken,
    written: Arc<AtomicU64>,
}

impl Writer {
    /// Patches `names` round-robin, `per_second` writes a second in all, spread over `lanes`.
    pub(super) fn start(
        api: &Api<ConfigMap>,
        names: &[String],
        per_second: u32,
        lanes: u32,
    ) -> Self {
        let gate = Arc::new(RwLock::new(()));
        let stop = CancellationToken::new();
        let written = Arc::new(AtomicU64::new(0));
        let period = Duration::from_secs(1) * lanes / per_second.max(1);
        let mut tasks = JoinSet::new();
        for lane in 0..lanes as usize {
            let mine: Vec<String> = names
                .iter()
                .skip(lane)
                .step_by(lanes as usize)
                .cloned()
                .collect();
            let (api, gate, stop, written) = (
                api.clone(),
                Arc::clone(&gate),
                stop.clone(),
                Arc::clone(&written),
            );
            tasks.spawn(async move {
                let mut ticks = tokio::time::interval(period);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                for (round, name) in mine.iter().cycle().enumerate() {
                    if stop.run_until_cancelled(ticks.tick()).await.is_none() {
                        return;
                    }
                    let _writing = gate.read().await;
                    let patch = serde_json::json!({ "data": { "round": round.to_string() } });
                    let patched = api
                        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await;
                    if patched.is_ok() {
                        written.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
        Self {
            lanes: tasks,
            gate,
            stop,
            written,
        }
    }

    /// Successful writes so far.
    pub(super) fn written(&self) -> u64 {
        self.written.load(Ordering::SeqCst)
    }

    /// Waits for `more` successful writes from now.
    pub(super) async fn wait_written(&self, more: u64) -> anyhow::Result<()> {
        let target = self.written() + more;
        Ok(wait_for(
            Duration::from_secs(60),
            &format!("{more} more successful writes"),
            || async { (self.written() >= target).then_some(()) },
        )
        .await?)
    }

    /// Stops writing until the guard is dropped; returns once no write is in progress.
    pub(super) async fn pause(&self) -> OwnedRwLockWriteGuard<()> {
        Arc::clone(&self.gate).write_owned().await
    }

    /// Stops the writers; returns the number of successful writes.
    pub(super) async fn stop(mut self) -> u64 {
        self.stop.cancel();
        while self.lanes.join_next().await.is_some() {}
        self.written()
    }
}

/// A ConfigMap `name` with one data entry.
pub(super) fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some([("round".to_owned(), "0".to_owned())].into()),
        ..ConfigMap::default()
    }
}

/// Creates ConfigMaps `prefix-0` … `prefix-(count-1)`, 16 at a time; returns their names.
pub(super) async fn create_config_maps(
    api: &Api<ConfigMap>,
    prefix: &str,
    count: usize,
) -> anyhow::Result<Vec<String>> {
    let names: Vec<String> = (0..count).map(|i| format!("{prefix}-{i}")).collect();
    futures::stream::iter(&names)
        .map(|name| async move { api.create(&PostParams::default(), &config_map(name)).await })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(names)
}
