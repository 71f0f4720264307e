//! A million ConfigMaps in one replica: each cache syncs from the fake API server (this process,
//! on loopback HTTP) in a child process of its own (`child.rs`), whose resident memory is read
//! from `/proc`.
//!
//! Run with `scripts/bench informer_scale` (`cargo bench -p kubeward --all-features --bench
//! informer_memory -- scale`). Each child syncs one cache (kube-runtime's reflector or a
//! kubeward informer, by paginated list or by streaming list), then keeps watching for
//! [`settle`]; it reports the time to synced, its peak resident memory (`VmHWM`: the whole
//! process, its runtime and client included), its resident memory after settling, and its live
//! heap then (counted by the bench's global allocator).

use http_body_util::BodyExt as _;
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::core::v1::ConfigMap;
use kubeward::testing::FakeApiServer;
use peak_alloc::PeakAlloc;
use tokio::time::Instant;

use crate::child::{self, HOT, Measured, Source, settle};
use crate::fixtures::{Fixture, quick};

/// ConfigMaps in the store: 1,000,000, or 2,000 with `KUBEWARD_BENCH_QUICK=1`, or as many as
/// [`OBJECTS`] says (for a machine or a time budget too small for a million). Children inherit it.
pub(crate) fn objects() -> usize {
    let given = std::env::var(OBJECTS).ok().and_then(|n| n.parse().ok());
    given.unwrap_or(if quick() { 2_000 } else { 1_000_000 })
}

/// The environment variable that sets [`objects`].
const OBJECTS: &str = "KUBEWARD_BENCH_SCALE_OBJECTS";

/// The caches, by the name a child is started with, and how each is described in the table.
pub(crate) const CACHES: [(&str, &str); 6] = [
    ("kube-runtime", "kube-runtime reflector, paginated list"),
    (
        "kube-runtime-stream",
        "kube-runtime reflector, streaming list",
    ),
    ("kubeward", "kubeward (default store), paginated list"),
    (
        "kubeward-stream",
        "kubeward (default store), streaming list",
    ),
    ("kubeward-compact", "kubeward compact, paginated list"),
    (
        "kubeward-compact-stream",
        "kubeward compact, streaming list",
    ),
];

/// Seeds the fake, serves it, runs one child per cache and prints the table.
pub(crate) fn run(heap: PeakAlloc) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let fixture = Fixture::config_map()?;
        let fake = FakeApiServer::new();
        fake.register::<ConfigMap>();
        let seeding = Instant::now();
        for i in 0..objects() {
            let object: ConfigMap = serde_json::from_str(&fixture.object(i, 1))?;
            fake.seed(&object)?;
        }
        eprintln!(
            "informer_scale: seeded {} ConfigMaps in {:.0?}",
            objects(),
            seeding.elapsed()
        );
        let source = Source::Url(serve(fake).await?);
        let mut rows = Vec::new();
        for (name, what) in CACHES {
            let measured = child::run(name, &source).await?;
            eprintln!("informer_scale: {what}: synced in {:.1?}", measured.synced);
            rows.push((what, measured));
        }
        print(&fixture, &rows);
        profile(&fixture, heap, &rows)?;
        Ok(())
    })
}

pub(crate) fn mb(bytes: u64) -> String {
    format!("{:.0} MB", bytes as f64 / 1e6)
}

fn print(fixture: &Fixture, rows: &[(&str, Measured)]) {
    let n = objects();
    println!("## A million objects in one replica\n");
    println!(
        "{n} ConfigMaps of {:.1} KB of JSON each (managedFields included; kubeward strips them, \
         kube-runtime keeps them by default), served by the fake API server over loopback \
         HTTP from another process; each cache syncs in a fresh process (two runtime threads) \
         and keeps watching for {settle:?}. Resident memory is the whole process's: peak \
         (`VmHWM`) and after settling; heap is the live bytes its allocator counted then. \
         Compact stores keep {HOT} objects decoded.\n",
        fixture.json_size() as f64 / 1024.0,
        settle = settle(),
    );
    println!(
        "| cache | time to synced | peak resident | settled resident | settled resident vs \
         kube-runtime (same list) | heap settled | heap peak − settled |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let ratio = |i: usize| {
        // kube-runtime with the same kind of list: row 0 (paginated) or row 1 (streaming).
        rows[i].1.settled as f64 / rows[i % 2].1.settled.max(1) as f64
    };
    for (i, (what, m)) in rows.iter().enumerate() {
        println!(
            "| {what} | {:.1} s | {} | {} | {:.2}× | {} | {} |",
            m.synced.as_secs_f64(),
            mb(m.peak),
            mb(m.settled),
            ratio(i),
            mb(m.heap),
            mb(m.heap_peak.saturating_sub(m.heap)),
        );
    }
    println!();
    if let [_, _, _, stream, compact, compact_stream] = rows {
        println!(
            "Goals: the default store at most 0.5× kube-runtime's resident memory ({:.2}× by \
             paginated list, {:.2}× by streaming list); a compact store at most 1 GB ({} and \
             {} resident); a streaming list's peak no higher than settled plus one batch (heap \
             peak − settled {} for the default store, {} compact; a batch decoding ahead is up \
             to 4 × 1 MB of events and their objects).\n",
            ratio(2),
            ratio(3),
            mb(compact.1.settled),
            mb(compact_stream.1.settled),
            mb(stream.1.heap_peak.saturating_sub(stream.1.heap)),
            mb(compact_stream
                .1
                .heap_peak
                .saturating_sub(compact_stream.1.heap)),
        );
    }
}

/// Where the default store's heap goes, streaming list: the cached objects (their heap measured
/// on a sample decoded as the informer decodes them), the store's map, keys and namespace index
/// (the rest), and what the process held before the informer started.
fn profile(fixture: &Fixture, heap: PeakAlloc, rows: &[(&str, Measured)]) -> anyhow::Result<()> {
    const SAMPLE: usize = 10_000;
    let Some((_, m)) = rows.get(3) else {
        return Ok(());
    };
    let before = heap.current_usage();
    let mut sample = Vec::with_capacity(SAMPLE);
    let vec_bytes = heap.current_usage() - before;
    for i in 0..SAMPLE {
        let mut raw: serde_json::Value = serde_json::from_str(&fixture.object(i, 1))?;
        if let Some(meta) = raw["metadata"].as_object_mut() {
            meta.remove("managedFields");
        }
        sample.push(std::sync::Arc::new(serde_json::from_value::<ConfigMap>(
            raw,
        )?));
    }
    let per_object = (heap.current_usage() - before - vec_bytes) as f64 / SAMPLE as f64;
    drop(sample);
    let n = objects() as f64;
    let total = m.heap as f64;
    let objects_share = per_object * n;
    let before_share = m.heap_before as f64;
    let store_share = (total - objects_share - before_share).max(0.0);
    println!(
        "### Where the heap goes: kubeward's default store, streaming list
"
    );
    println!("| part | heap | share | per object |");
    println!("| --- | ---: | ---: | ---: |");
    for (part, bytes) in [
        (
            "the cached objects (`Arc<ConfigMap>`: strings, maps, owner reference)",
            objects_share,
        ),
        ("the store: its map, keys and namespace index", store_share),
        (
            "the process before the informer started (runtime, client)",
            before_share,
        ),
    ] {
        println!(
            "| {part} | {:.0} MB | {:.0} % | {:.0} B |",
            bytes / 1e6,
            bytes / total * 100.0,
            bytes / n
        );
    }
    println!();
    Ok(())
}

/// Serves `fake` over HTTP/1.1 on a free loopback port; returns its URL.
async fn serve(fake: FakeApiServer) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let fake = fake.clone();
            let service =
                hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let mut fake = fake.clone();
                    async move {
                        let (parts, body) = request.into_parts();
                        let body = body.collect().await?.to_bytes();
                        let request = http::Request::from_parts(
                            parts,
                            kube::client::Body::from(body.to_vec()),
                        );
                        let response = tower_service::Service::call(&mut fake, request).await;
                        Ok::<_, hyper::Error>(response.unwrap_or_else(|never| match never {}))
                    }
                });
            tokio::spawn(async move {
                let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                let _ = builder
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(url)
}
