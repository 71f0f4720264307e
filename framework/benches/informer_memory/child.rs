//! One cache syncing a million ConfigMaps in a process of its own, from the fake API server or
//! the local control plane, and what it measured.
//!
//! The parent runs this bench binary again with [`CHILD`] naming the cache and either [`URL`]
//! (the fake, plain HTTP) or [`KUBECONFIG`] (the control plane) saying where to sync from. The
//! child syncs, keeps watching for [`settle`], and prints its figures on one line of stdout.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::{reflector, watcher};
use kubeward::informer::{self, SharedInformer, WatchList};
use peak_alloc::PeakAlloc;
use tokio::time::Instant;

use crate::fixtures::Fixture;
use crate::scale::objects;

/// The environment variable that makes the bench binary a child syncing the cache it names.
pub(crate) const CHILD: &str = "KUBEWARD_BENCH_SCALE_CHILD";
/// The fake API server's URL, for a child.
const URL: &str = "KUBEWARD_BENCH_SCALE_URL";
/// The control plane's kubeconfig, for a child.
const KUBECONFIG: &str = "KUBEWARD_BENCH_SCALE_KUBECONFIG";
/// How long a child keeps watching after its sync before its settled memory is read: time for
/// the sync's transient buffers to be freed and the decode threads to go idle: 3 s, or 1 s with
/// `KUBEWARD_BENCH_QUICK=1`.
pub(crate) fn settle() -> Duration {
    Duration::from_secs(if crate::fixtures::quick() { 1 } else { 3 })
}
/// Objects a compact store keeps decoded.
pub(crate) const HOT: usize = 1024;

/// Where a child syncs from.
pub(crate) enum Source {
    /// The fake API server at this plain-HTTP URL.
    Url(String),
    /// The API server of this kubeconfig (the local control plane).
    Kubeconfig(PathBuf),
}

/// What a child measured.
pub(crate) struct Measured {
    pub(crate) synced: Duration,
    pub(crate) peak: u64,
    pub(crate) settled: u64,
    pub(crate) heap: u64,
    pub(crate) heap_peak: u64,
    /// Live heap before the cache started (runtime, client).
    pub(crate) heap_before: u64,
}

/// Runs this binary as the child that syncs cache `name` from `source`; returns what it
/// measured. Call it from a runtime that serves what the child syncs from (if it does): the
/// child is waited for on the blocking pool.
pub(crate) async fn run(name: &str, source: &Source) -> anyhow::Result<Measured> {
    let exe = std::env::current_exe()?;
    let (key, value) = match source {
        Source::Url(url) => (URL, url.into()),
        Source::Kubeconfig(path) => (KUBECONFIG, path.as_os_str().to_owned()),
    };
    let name_env = name.to_owned();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(exe)
            .env(CHILD, name_env)
            .env(key, value)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
    })
    .await??;
    anyhow::ensure!(
        output.status.success(),
        "the {name} child failed: {}",
        output.status
    );
    let text = String::from_utf8(output.stdout)?;
    let numbers: Vec<u64> = text
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("the {name} child printed {text:?}: {e}"))?;
    let [synced_micros, peak, settled, heap, heap_peak, heap_before] = numbers[..] else {
        anyhow::bail!("the {name} child printed {text:?}");
    };
    Ok(Measured {
        synced: Duration::from_micros(synced_micros),
        peak,
        settled,
        heap,
        heap_peak,
        heap_before,
    })
}

/// The client of the source the parent named: the control plane's kubeconfig, else the fake's
/// URL.
async fn client() -> anyhow::Result<kube::Client> {
    if let Some(path) = std::env::var_os(KUBECONFIG) {
        let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
        let options = kube::config::KubeConfigOptions::default();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await?;
        return Ok(kube::Client::try_from(config)?);
    }
    let url: http::Uri = std::env::var(URL)?.parse()?;
    Ok(kube::Client::try_from(kube::Config::new(url))?)
}

/// In a child: syncs cache `name` from the source the parent named, keeps watching for
/// [`settle`], and prints microseconds to synced, peak and settled resident bytes and heap bytes.
pub(crate) fn child(name: &str, heap: PeakAlloc) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let measured = runtime.block_on(async {
        let api = Api::<ConfigMap>::namespaced(client().await?, &Fixture::config_map()?.namespace);
        let heap_before = heap.current_usage() as u64;
        let started = Instant::now();
        let (synced, cached, keep) = match name {
            "kube-runtime" | "kube-runtime-stream" => {
                let mut config = watcher::Config::default();
                if name.ends_with("-stream") {
                    config = config.streaming_lists();
                }
                let (reader, writer) = reflector::store();
                let mut stream = Box::pin(reflector(writer, watcher(api, config)));
                while let Some(event) = stream.next().await {
                    if matches!(event?, watcher::Event::InitDone) {
                        break;
                    }
                }
                let synced = started.elapsed();
                let watching = tokio::spawn(async move { while stream.next().await.is_some() {} });
                (
                    synced,
                    reader.state().len(),
                    Box::new((reader, watching)) as Box<dyn std::any::Any>,
                )
            }
            _ => {
                let mut config = informer::Config::default();
                if name.ends_with("-stream") {
                    config = config.watch_list(WatchList::On);
                }
                if name.contains("compact") {
                    config = config.compact(HOT);
                }
                let informer = SharedInformer::new(api, config);
                informer.start()?;
                informer.wait_for_sync().await?;
                let synced = started.elapsed();
                let cached = informer.store().len();
                (synced, cached, Box::new(informer) as Box<dyn std::any::Any>)
            }
        };
        anyhow::ensure!(
            cached == objects(),
            "{name}: cached {cached} of {}",
            objects()
        );
        tokio::time::sleep(settle()).await;
        let status = std::fs::read_to_string("/proc/self/status")?;
        let field = |key: &str| -> anyhow::Result<u64> {
            let line = status
                .lines()
                .find(|line| line.starts_with(key))
                .ok_or_else(|| anyhow::anyhow!("no {key} in /proc/self/status"))?;
            let kib: u64 = line
                .trim_start_matches(key)
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()?;
            Ok(kib * 1024)
        };
        let measured = Measured {
            synced,
            peak: field("VmHWM:")?,
            settled: field("VmRSS:")?,
            heap: heap.current_usage() as u64,
            heap_peak: heap.peak_usage() as u64,
            heap_before,
        };
        drop(keep);
        anyhow::Ok(measured)
    })?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} {} {} {} {} {}",
        measured.synced.as_micros(),
        measured.peak,
        measured.settled,
        measured.heap,
        measured.heap_peak,
        measured.heap_before
    )?;
    // The runtime's threads may still be on their way out; the answer is written.
    std::process::exit(0);
}
