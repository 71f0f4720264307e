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
#![allow(clippy::print_stdout, reason = "a bench binary that prints its tables")]
#![allow(
    clippy::cast_precision_loss,
    reason = "byte counts and nanoseconds shown with one decimal"
)]

mod caches;
mod fixtures;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::core::{ObjectList, PartialObjectMeta};
use peak_alloc::PeakAlloc;

use caches::{Cache, Kind, KubeRuntime, Kubeward};
use fixtures::{Fixture, OBJECTS, PAGE};

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
    cache.read_all()?;
    let steady = HEAP.current_usage().saturating_sub(base);
    anyhow::ensure!(
        cache.len() == OBJECTS,
        "{what}: the list cached {}",
        cache.len()
    );
    HEAP.reset_peak_usage();
    cache.relist(fixture, 2)?;
    let peak = HEAP.peak_usage().saturating_sub(base);
    anyhow::ensure!(
        cache.len() == OBJECTS,
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
        measure("kubeward, metadata only", &metadata, || {
            Kubeward::<PartialObjectMeta<K>>::new(true)
        })?,
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
            || Kubeward::<K>::compact(true, HOT).pages_of(100),
        )?,
    ])
}

/// Nanoseconds per `get`: kube-runtime, kubeward's default store, a compact store's hot
/// objects, and its cold ones (each read decodes).
fn reads<K: Kind>(fixture: &Fixture) -> anyhow::Result<[(&'static str, f64); 5]> {
    let filled = |mut cache: Box<dyn Cache>| -> anyhow::Result<Box<dyn Cache>> {
        cache.relist(fixture, 1)?;
        Ok(cache)
    };
    let kube_runtime = filled(Box::new(KubeRuntime::<K>::new()))?.time_gets(OBJECTS, 10)?;
    let kubeward = filled(Box::new(Kubeward::<K>::new(true)))?;
    let default = kubeward.time_gets(OBJECTS, 10)?;
    let few = kubeward.time_gets(HOT / 2, 10)?;
    drop(kubeward);
    let compact = filled(Box::new(Kubeward::<K>::compact(true, HOT)))?;
    let hot = compact.time_gets(HOT / 2, 10)?;
    drop(compact);
    let cold = filled(Box::new(Kubeward::<K>::compact(true, 0)))?.time_gets(OBJECTS, 3)?;
    Ok([
        ("kube-runtime reflector store", kube_runtime),
        ("kubeward", default),
        ("kubeward, the same 128 objects again and again", few),
        ("kubeward compact, hot object (the same 128)", hot),
        ("kubeward compact, cold object (decode)", cold),
    ])
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

    let text = fixture.page(0, PAGE, 1);
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
        "### {OBJECTS} {} ({} of JSON each)\n",
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
            kb(row.steady / OBJECTS),
            row.steady as f64 / baseline as f64,
            row.steady as f64 / (json * OBJECTS) as f64,
            row.peak as f64 / row.steady.max(1) as f64,
        );
    }
    println!();
}

fn main() -> anyhow::Result<()> {
    let pods = Fixture::pod()?;
    let config_maps = Fixture::config_map()?;

    println!("## Cache memory\n");
    println!(
        "{OBJECTS} objects per cache, listed in pages of {PAGE}, then relisted with every object \
         changed; heap counted by a global allocator (page text and parse buffers included). \
         Compact stores keep {HOT} objects decoded and were read once through, so their hot set \
         is full.\n"
    );
    let pod_rows = memory::<Pod>(&pods)?;
    print_memory(&pods, &pod_rows);
    let map_rows = memory::<ConfigMap>(&config_maps)?;
    print_memory(&config_maps, &map_rows);

    println!("### Where a relist's transient memory goes: one page of {PAGE}\n");
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
    println!("### Reads: nanoseconds per `get`, fastest of several passes of 10,000\n");
    println!("| cache | Pod | ConfigMap |");
    println!("| --- | ---: | ---: |");
    for ((what, pod), (_, map)) in pod_reads.iter().zip(&map_reads) {
        println!("| {what} | {pod:.0} | {map:.0} |");
    }

    for row in pod_rows.iter().chain(&map_rows).skip(1) {
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
