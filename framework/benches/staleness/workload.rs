//! The two reconcilers every side runs, and the writes that drive them.
//!
//! The reconciler logic is written once, against [`Cache`] (what a side reads from its cache)
//! and a direct client (its writes), so kube-runtime and kubeward run the same code:
//! - [`Workload::Copier`]: creates a copy of each source with `generateName` when its cached
//!   list shows none (a second copy is a duplicate);
//! - [`Workload::Recorder`]: keeps `<source>-seen` holding the source's data, reading it from the
//!   cache and creating it when that shows none, else replacing it under the cached
//!   resourceVersion (nobody else writes it, so each 409 comes from a stale read).
//!
//! [`drive`] first waits until the side reconciled a sentinel (its cache synced, its worker
//! running), so no write is timed across its start-up; then it creates three sources and changes
//! one every 60 ms (each every 180 ms), as the integration tests `read_your_writes.rs` and
//! `expectations.rs` do, noting when each write was sent; it then waits until every source's
//! last write was reconciled.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use kubeward::testing::wait_for;
use parking_lot::Mutex;
use serde_json::json;
use tokio::time::Instant;

/// Sources changed by [`drive`].
pub const SOURCES: usize = 3;

/// Which reconciler a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Creates a copy with `generateName` when its cached list shows none.
    Copier,
    /// Replaces `<source>-seen` under the resourceVersion its cache shows.
    Recorder,
}

/// What a side reads from its cache (kube-runtime's reflector store, kubeward's `Context`).
pub trait Cache: Sync {
    /// How many copies of `source` the cache holds.
    fn copies(&self, source: &str) -> impl Future<Output = kube::Result<usize>> + Send;
    /// The cached object named `name`, if any.
    fn get(&self, name: &str) -> impl Future<Output = kube::Result<Option<Arc<ConfigMap>>>> + Send;
}

/// What the reconciles did: how many ran on sources, and which source versions they finished.
#[derive(Default)]
pub struct Log {
    /// Whether a reconcile saw the sentinel: the side's cache is synced and its worker runs.
    pub ready: AtomicBool,
    /// Reconciles of a source, failed ones included.
    pub reconciles: AtomicUsize,
    /// Each successful reconcile: source name, resourceVersion it saw, when it finished.
    pub finished: Mutex<Vec<(String, u64, Instant)>>,
}

/// One write to a source: its name, the resourceVersion it made, when it was sent.
pub type Write = (String, u64, Instant);

/// Reconciles `source` as `workload` does: reads `cache`, writes through `api` (direct).
pub async fn reconcile(
    workload: Workload,
    source: &ConfigMap,
    cache: &impl Cache,
    api: &Api<ConfigMap>,
    log: &Log,
) -> kube::Result<()> {
    match source.labels().get("role").map(String::as_str) {
        Some("source") => {}
        Some("sentinel") => {
            log.ready.store(true, Ordering::Relaxed);
            return Ok(());
        }
        _ => return Ok(()),
    }
    log.reconciles.fetch_add(1, Ordering::Relaxed);
    let name = source.name_any();
    match workload {
        Workload::Copier => {
            if cache.copies(&name).await? == 0 {
                let copy = ConfigMap {
                    metadata: ObjectMeta {
                        generate_name: Some(format!("{name}-")),
                        labels: Some([("copy-of".to_owned(), name.clone())].into()),
                        ..ObjectMeta::default()
                    },
                    ..ConfigMap::default()
                };
                api.create(&PostParams::default(), &copy).await?;
            }
        }
        Workload::Recorder => {
            let seen_name = format!("{name}-seen");
            match cache.get(&seen_name).await? {
                None => {
                    let seen = ConfigMap {
                        metadata: ObjectMeta {
                            name: Some(seen_name),
                            ..ObjectMeta::default()
                        },
                        data: source.data.clone(),
                        ..ConfigMap::default()
                    };
                    api.create(&PostParams::default(), &seen).await?;
                }
                Some(seen) if seen.data != source.data => {
                    let mut seen = (*seen).clone();
                    seen.data.clone_from(&source.data);
                    api.replace(&seen_name, &PostParams::default(), &seen)
                        .await?;
                }
                Some(_) => {}
            }
        }
    }
    let version = version(source);
    log.finished.lock().push((name, version, Instant::now()));
    Ok(())
}

/// Waits until the side reconciled a sentinel, creates the sources and changes them for
/// `rounds` rounds; waits until the reconciles finished every source's last write; returns the
/// writes.
pub async fn drive(api: &Api<ConfigMap>, rounds: usize, log: &Log) -> anyhow::Result<Vec<Write>> {
    api.create(&PostParams::default(), &labelled("sentinel", "sentinel"))
        .await?;
    wait_for(
        Duration::from_secs(30),
        "the side to reconcile the sentinel",
        || async { log.ready.load(Ordering::Relaxed).then_some(()) },
    )
    .await?;
    let mut writes = Vec::new();
    for n in 0..SOURCES {
        let source = labelled(&format!("source-{n}"), "source");
        let sent = Instant::now();
        let made = api.create(&PostParams::default(), &source).await?;
        writes.push((made.name_any(), version(&made), sent));
    }
    let mut ticks = tokio::time::interval(Duration::from_millis(60));
    for round in 0..rounds {
        for n in 0..SOURCES {
            ticks.tick().await;
            let data = json!({ "data": { "round": round.to_string() } });
            let sent = Instant::now();
            let made = api
                .patch(
                    &format!("source-{n}"),
                    &PatchParams::default(),
                    &Patch::Merge(&data),
                )
                .await?;
            writes.push((made.name_any(), version(&made), sent));
        }
    }
    let mut last: HashMap<String, u64> = HashMap::new();
    for (name, version, _) in &writes {
        last.insert(name.clone(), *version);
    }
    wait_for(
        Duration::from_secs(60),
        "the reconciles to finish every source's last write",
        || async {
            let finished = log.finished.lock();
            let done = last
                .iter()
                .all(|(name, version)| finished.iter().any(|(n, v, _)| n == name && v >= version));
            done.then_some(())
        },
    )
    .await?;
    Ok(writes)
}

/// For each write, the time from its sending to the first reconcile of its source that saw it
/// (or a later version) finishing.
pub fn latencies(writes: &[Write], log: &Log) -> Vec<Duration> {
    let finished = log.finished.lock();
    writes
        .iter()
        .filter_map(|(name, version, sent)| {
            finished
                .iter()
                .filter(|(n, v, _)| n == name && v >= version)
                .map(|(_, _, at)| at.saturating_duration_since(*sent))
                .min()
        })
        .collect()
}

/// A ConfigMap named `name` with the label `role=<role>`.
fn labelled(name: &str, role: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some([("role".to_owned(), role.to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// The resourceVersion of `cm` as an integer (kube-apiserver's are etcd revisions).
fn version(cm: &ConfigMap) -> u64 {
    cm.resource_version()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
