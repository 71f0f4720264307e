//! Measures the heap per cached object and its peak during a relist: kube-runtime's reflector
//! store against kubeward's store (default, managedFields kept, metadata only, compact), and the
//! cost of a read.
//!
//! Run with `scripts/bench informer_memory` (or `cargo bench -p kubeward --bench
//! informer_memory`). A counting global allocator (`peak_alloc`) records the process's live heap
//! bytes and their peak. Each cache is filled by one list of 10,000 objects in pages of 500 and
//! then relisted with every object changed, each fed the way its own informer feeds it (see
//! `caches.rs`). Figures count the whole heap, page text and parse buffers included, so peaks
//! are an upper bound for the stores alone. The objects' JSON size is the reference.
//!
//! With the argument `scale` (`scripts/bench informer_scale`), it runs `scale.rs` instead: a
//! million ConfigMaps synced by paginated and streaming lists from the fake API server, each cache
//! in a process of its own (`child.rs`); with `scale-control-plane`
//! (`scripts/bench informer_scale_control_plane`), `control_plane.rs`: the same by paginated lists
//! from the local control plane.
#![allow(clippy::print_stdout, reason = "a bench binary that prints its tables")]
#![allow(
    clippy::cast_precision_loss,
    reason = "byte counts and nanoseconds shown with one decimal"
)]

mod caches;
mod child;
mod control_plane;
mod fixtures;
mod scale;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::core::{ObjectList, PartialObjectMeta};
use peak_alloc::PeakAlloc;

use caches::{ByName, Cache, Kind, KubeRuntime, Kubeward};
use fixtures::{Fixture, objects, page_size, quick};

#[global_allocator]
static HEAP: PeakAlloc = PeakAlloc;

/// Objects a compact store keeps decoded in these runs: 2.5% of the cache.
const HOT: usize = 256;

/// Heap bytes a cache holds steadily (after its first list and a read of every object) and at
/// the peak of a relist in which every object changed.
struct Row {
    what: &'static str,
    steady: usize,
    peak: usize,
}

fn measure<C: Cache>(
    what: &'static str,
    fixture: &Fixture,
    make: impl FnOnce() -> C,
) -> anyhow::Result<Row> {
    let base = HEAP.current_usage();
    let mut cache = make();
    cache.relist(fixture, 1)?;
    cache.read_all(fixture)?;
    let steady = HEAP.current_usage().saturating_sub(base);
    anyhow::ensure!(
        cache.len() == objects(),
        "{what}: the list cached {}",
        cache.len()
    );
    HEAP.reset_peak_usage();
    cache.relist(fixture, 2)?;
    let peak = HEAP.peak_usage().saturating_sub(base);
    anyhow::ensure!(
        cache.len() == objects(),
        "{what}: the relist kept {}",
        cache.len()
    );
    Ok(Row { what, steady, peak })
}

fn memory<K: Kind>(fixture: &Fixture) -> anyhow::Result<Vec<Row>> {
    let metadata = fixture.metadata_only()?;
    Ok(vec![
        measure(
            "kube-runtime reflector store (managedFields kept: its default)",
            fixture,
            KubeRuntime::<K>::new,
        )?,
        measure(
            "kubeward (managedFields stripped: its default)",
            fixture,
            || Kubeward::<K>::new(true),
        )?,
        measure("kubeward, managedFields kept", fixture, || {
            Kubeward::<K>::new(false)
        })?,
        measure(
            "kubeward, metadata only (`owns_metadata`, `watches_metadata`)",
            &metadata,
            || Kubeward::<PartialObjectMeta<K>>::new(true),
        )?,
        measure("kubeward compact, hot set full", fixture, || {
            Kubeward::<K>::compact(true, HOT)
        })?,
        measure(
            "kubeward compact, managedFields kept, hot set full",
            fixture,
            || Kubeward::<K>::compact(false, HOT),
        )?,
        measure(
            "kubeward compact, pages of 100, hot set full",
            fixture,
            || Kubeward::<K>::compact(true, HOT).pages_of(page_size() / 5), // 100; 10 when quick
        )?,
    ])
}

/// Objects in the "hot" read column: the same few, read again and again.
const HOT_READS: usize = 128;

/// Nanoseconds per `get`, "hot" (the same 128 objects, cycled) and "cold" (every object), each
/// cache reading the same names in the same shuffled order with keys it builds fresh:
/// kube-runtime, kubeward's default store (by `ObjectKey`, and by name without a key), and a
/// compact store (whose cold reads decode).
fn reads<K: Kind>(fixture: &Fixture) -> anyhow::Result<Vec<(&'static str, f64, f64)>> {
    let n = objects();
    let mut order: Vec<usize> = (0..n).collect();
    shuffle(&mut order);
    let cold: Vec<String> = order.iter().map(|&i| Fixture::name(i)).collect();
    let hot: Vec<String> = cold
        .iter()
        .take(HOT_READS)
        .cycle()
        .take(n)
        .cloned()
        .collect();
    let ns = fixture.namespace.as_str();
    let time = |cache: &dyn Cache, passes: usize| -> anyhow::Result<(f64, f64)> {
        Ok((
            cache.time_gets(ns, &hot, passes)?,
            cache.time_gets(ns, &cold, passes)?,
        ))
    };
    let filled = |mut cache: Box<dyn Cache>| -> anyhow::Result<Box<dyn Cache>> {
        cache.relist(fixture, 1)?;
        Ok(cache)
    };
    let passes = if quick() { 1 } else { 10 };
    let mut rows = Vec::new();
    let (h, c) = time(&*filled(Box::new(KubeRuntime::<K>::new()))?, passes)?;
    rows.push(("kube-runtime reflector store (`ObjectRef`)", h, c));
    let (h, c) = time(&*filled(Box::new(Kubeward::<K>::new(true)))?, passes)?;
    rows.push(("kubeward (`ObjectKey`)", h, c));
    let (h, c) = time(
        &*filled(Box::new(ByName(Kubeward::<K>::new(true))))?,
        passes,
    )?;
    rows.push(("kubeward, `get_by_name` (no key built)", h, c));
    let compact = filled(Box::new(Kubeward::<K>::compact(true, HOT)))?;
    let hot_compact = compact.time_gets(ns, &hot, passes)?;
    drop(compact);
    let cold_compact =
        filled(Box::new(Kubeward::<K>::compact(true, 0)))?.time_gets(ns, &cold, passes.min(3))?;
    rows.push((
        "kubeward compact (hot: its hot set; cold: a decode per read)",
        hot_compact,
        cold_compact,
    ));
    Ok(rows)
}

/// A fixed shuffle (the same order for every cache and every run).
fn shuffle(items: &mut [usize]) {
    let mut state: u64 = 0x5EED;
    for i in (1..items.len()).rev() {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let j = usize::try_from((state >> 33) % (i as u64 + 1)).unwrap_or(0);
        items.swap(i, j);
    }
}

/// Where a relist's transient memory goes: one page of 500 as text, parsed into untyped values
/// (how kubeward's reflector held a page until this benchmark showed their cost), split into its
/// items' JSON texts (how it holds one now), and decoded (how kube-runtime's watcher holds one).
fn page_profile<K: Kind>(fixture: &Fixture) -> anyhow::Result<[usize; 4]> {
    #[derive(serde::Deserialize)]
    struct Values {
        #[allow(dead_code, reason = "only held, to be measured")]
        items: Vec<serde_json::Value>,
    }

    let text = fixture.page(0, page_size(), 1);
    let held = |parse: &dyn Fn() -> anyhow::Result<Box<dyn std::any::Any>>| {
        let before = HEAP.current_usage();
        let parsed = parse()?;
        let bytes = HEAP.current_usage().saturating_sub(before);
        drop(parsed);
        anyhow::Ok(bytes)
    };
    let values = held(&|| Ok(Box::new(serde_json::from_str::<Values>(&text)?)))?;
    let raw = held(&|| Ok(Box::new(serde_json::from_str::<caches::RawList>(&text)?)))?;
    let decoded = held(&|| Ok(Box::new(serde_json::from_str::<ObjectList<K>>(&text)?)))?;
    Ok([text.len(), values, raw, decoded])
}

fn kb(bytes: usize) -> String {
    format!("{:.1} KB", bytes as f64 / 1024.0)
}

fn print_memory(fixture: &Fixture, rows: &[Row]) {
    let json = fixture.json_size();
    let baseline = rows.first().map_or(1, |row| row.steady).max(1);
    println!(
        "### {} {} ({} of JSON each)\n",
        objects(),
        fixture.plural,
        kb(json)
    );
    println!("| cache | heap per object | vs kube-runtime | vs JSON | relist peak / steady |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    println!(
        "| the objects' JSON (reference) | {} | | 1.0× | |",
        kb(json)
    );
    for row in rows {
        println!(
            "| {} | {} | {:.2}× | {:.1}× | {:.2}× |",
            row.what,
            kb(row.steady / objects()),
            row.steady as f64 / baseline as f64,
            row.steady as f64 / (json * objects()) as f64,
            row.peak as f64 / row.steady.max(1) as f64,
        );
    }
    println!();
}

fn main() -> anyhow::Result<()> {
    if let Ok(name) = std::env::var(child::CHILD) {
        return child::child(&name, HEAP);
    }
    if std::env::args().any(|arg| arg == "scale") {
        return scale::run(HEAP);
    }
    if std::env::args().any(|arg| arg == "scale-control-plane") {
        return control_plane::run();
    }
    let pods = Fixture::pod()?;
    let config_maps = Fixture::config_map()?;

    println!("## Cache memory\n");
    println!(
        "{} objects per cache, listed in pages of {}, then relisted with every object \
         changed; heap counted by a global allocator (page text and parse buffers included). \
         Compact stores keep {HOT} objects decoded and were read once through, so their hot set \
         is full.\n",
        objects(),
        page_size()
    );
    let pod_rows = memory::<Pod>(&pods)?;
    print_memory(&pods, &pod_rows);
    let map_rows = memory::<ConfigMap>(&config_maps)?;
    print_memory(&config_maps, &map_rows);

    println!(
        "### Where a relist's transient memory goes: one page of {}\n",
        page_size()
    );
    println!("| kind | page text | as untyped values | as items' JSON texts | decoded |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (fixture, sizes) in [
        (&pods, page_profile::<Pod>(&pods)?),
        (&config_maps, page_profile::<ConfigMap>(&config_maps)?),
    ] {
        let [text, values, raw, decoded] =
            sizes.map(|bytes| format!("{:.1} MB", bytes as f64 / 1e6));
        println!(
            "| {} | {text} | {values} | {raw} | {decoded} |",
            fixture.plural
        );
    }
    println!();

    let pod_reads = reads::<Pod>(&pods)?;
    let map_reads = reads::<ConfigMap>(&config_maps)?;
    println!("### Reads: nanoseconds per `get`\n");
    println!(
        "Every cache reads the same names in the same shuffled order, with lookup keys built \
         fresh from the names before the clock starts (`get_by_name` builds none). Hot: \
         {HOT_READS} objects cycled, {n} reads; cold: each of the {n} objects once. Fastest of \
         several passes.\n",
        n = objects()
    );
    println!("| cache | Pod, hot | Pod, cold | ConfigMap, hot | ConfigMap, cold |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for ((what, pod_hot, pod_cold), (_, map_hot, map_cold)) in pod_reads.iter().zip(&map_reads) {
        println!("| {what} | {pod_hot:.0} | {pod_cold:.0} | {map_hot:.0} | {map_cold:.0} |");
    }
    if let (Some(theirs), Some(ours)) = (pod_reads.first(), pod_reads.get(1)) {
        let (map_theirs, map_ours) = (&map_reads[0], &map_reads[1]);
        println!(
            "\nCold `get`, kubeward / kube-runtime: Pod {:.2}×, ConfigMap {:.2}× (lower is better).",
            ours.2 / theirs.2,
            map_ours.2 / map_theirs.2
        );
    }

    // The reduced workload of `--quick` is too small for the promise: its page buffers weigh
    // more against 1,000 objects than against 10,000.
    for row in pod_rows
        .iter()
        .chain(&map_rows)
        .skip(1)
        .filter(|_| !quick())
    {
        if row.what.starts_with("kubeward (") {
            let ratio = row.peak as f64 / row.steady as f64;
            anyhow::ensure!(
                ratio < 1.3,
                "{}: relist peak {ratio:.2}x steady, over the 1.3x promise",
                row.what
            );
        }
    }
    Ok(())
}
