//! Measures the heap while a store of 10,000 realistic Pods is relisted, against the steady state.
//!
//! Run with `cargo bench -p kubeward --bench informer_memory`. A counting global allocator
//! (`peak_alloc`) records the process's live heap bytes and their peak. Each relist goes the
//! reflector's way: a page of 500 objects arrives as one JSON text, is parsed into untyped values,
//! each value is decoded into a `Pod` on its own (managedFields stripped) and applied to the store
//! in place; vanished objects are removed at the end. The baseline in the same run is the
//! "second buffer, then swap" relist (kube-runtime's way). Figures count the whole heap,
//! page text and parse buffers included, so they are an upper bound for the store alone.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::Resource;
use kubeward::cache::{self, ObjectKey, Store, Writer};
use peak_alloc::PeakAlloc;
use serde::Deserialize;
use serde_json::Value;

#[global_allocator]
static HEAP: PeakAlloc = PeakAlloc;

const OBJECTS: usize = 10_000;
const PAGE: usize = 500;

/// One list response with undecoded items, as the reflector reads it.
#[derive(Deserialize)]
struct RawList {
    items: Vec<Value>,
}

/// The fixture as JSON text with placeholders for what varies per copy.
fn template() -> anyhow::Result<String> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/realistic-pod.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        anyhow::anyhow!(
            "reading {}: {e} (the shared fixtures sit beside the repository)",
            path.display()
        )
    })?;
    let mut pod: Value = serde_json::from_str(&text)?;
    pod["metadata"]["name"] = "@NAME@".into();
    pod["metadata"]["uid"] = "@UID@".into();
    pod["metadata"]["resourceVersion"] = "@RV@".into();
    Ok(serde_json::to_string(&pod)?)
}

/// The JSON text of list page `page`, every object at resourceVersion `generation`.
fn page_text(template: &str, page: usize, generation: u64) -> String {
    let mut text = String::with_capacity(PAGE * (template.len() + 16) + 64);
    text.push_str(r#"{"kind":"PodList","apiVersion":"v1","metadata":{},"items":["#);
    for i in page * PAGE..(page + 1) * PAGE {
        if i > page * PAGE {
            text.push(',');
        }
        let object = template
            .replace("@NAME@", &format!("web-7d4f4bd8dc-{i:05}"))
            .replace("@UID@", &format!("3f1c2d7e-8b9a-4c1d-9e2f-{i:012}"))
            .replace("@RV@", &(generation * 100_000 + i as u64).to_string());
        text.push_str(&object);
    }
    text.push_str("]}");
    text
}

/// Decodes one page the reflector's way: parse, then decode each object on its own.
fn decode_page(text: &str, strip: bool) -> anyhow::Result<Vec<Arc<Pod>>> {
    let list: RawList = serde_json::from_str(text)?;
    let mut pods = Vec::with_capacity(list.items.len());
    for item in list.items {
        let mut pod = Pod::deserialize(&item)?;
        if strip {
            pod.meta_mut().managed_fields = None;
        }
        pods.push(Arc::new(pod));
    }
    Ok(pods)
}

/// Relists in place: each page is applied as it arrives, then what vanished is removed.
fn relist_in_place(
    writer: &Writer<Pod>,
    template: &str,
    generation: u64,
    strip: bool,
) -> anyhow::Result<()> {
    let mut relist = writer.relist();
    for page in 0..OBJECTS / PAGE {
        let text = page_text(template, page, generation);
        for pod in decode_page(&text, strip)? {
            let _ = relist.apply(pod);
        }
    }
    let _ = relist.finish();
    Ok(())
}

/// The baseline: collect the whole new list in a second map, then swap it in.
fn relist_by_swap(
    map: &mut HashMap<ObjectKey, Arc<Pod>>,
    template: &str,
    generation: u64,
) -> anyhow::Result<()> {
    let mut fresh = HashMap::new();
    for page in 0..OBJECTS / PAGE {
        let text = page_text(template, page, generation);
        for pod in decode_page(&text, true)? {
            fresh.insert(ObjectKey::of(pod.as_ref()), pod);
        }
    }
    *map = fresh;
    Ok(())
}

/// Heap bytes above what the process held before the store was filled.
struct Row {
    what: &'static str,
    steady: usize,
    peak: usize,
}

fn measure(
    what: &'static str,
    base: usize,
    relist: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<Row> {
    let steady = HEAP.current_usage() - base;
    HEAP.reset_peak_usage();
    relist()?;
    Ok(Row {
        what,
        steady,
        peak: HEAP.peak_usage() - base,
    })
}

fn filled(template: &str, strip: bool) -> anyhow::Result<(Store<Pod>, Writer<Pod>)> {
    let (store, writer) = cache::store::<Pod>();
    relist_in_place(&writer, template, 1, strip)?;
    anyhow::ensure!(
        store.len() == OBJECTS,
        "the first list cached {} objects",
        store.len()
    );
    Ok((store, writer))
}

fn main() -> anyhow::Result<()> {
    let template = template()?;
    let mut rows = Vec::new();
    let mut per_object = Vec::new();

    for strip in [true, false] {
        let before = HEAP.current_usage();
        let filled = filled(&template, strip)?;
        per_object.push((strip, (HEAP.current_usage() - before) / OBJECTS));
        drop(filled);
    }

    let base = HEAP.current_usage();
    let (store, writer) = filled(&template, true)?;
    rows.push(measure("in place, nothing changed", base, || {
        relist_in_place(&writer, &template, 1, true)
    })?);
    rows.push(measure("in place, every object changed", base, || {
        relist_in_place(&writer, &template, 2, true)
    })?);
    anyhow::ensure!(
        store.len() == OBJECTS,
        "the relists kept {} objects",
        store.len()
    );
    drop((store, writer));

    let base = HEAP.current_usage();
    let mut map = HashMap::new();
    relist_by_swap(&mut map, &template, 1)?;
    rows.push(measure("baseline: second map, then swap", base, || {
        relist_by_swap(&mut map, &template, 2)
    })?);

    let mut out = std::io::stdout().lock();
    writeln!(out, "{OBJECTS} realistic Pods, pages of {PAGE}")?;
    for (strip, bytes) in per_object {
        let how = if strip {
            "managedFields stripped"
        } else {
            "managedFields kept"
        };
        writeln!(
            out,
            "heap per cached Pod ({how}): {:.1} KB",
            bytes as f64 / 1024.0
        )?;
    }
    writeln!(
        out,
        "| {:<34} | {:>10} | {:>10} | {:>11} |",
        "relist", "steady MB", "peak MB", "peak/steady"
    )?;
    writeln!(
        out,
        "| {:-<34} | {:->10} | {:->10} | {:->11} |",
        "", "", "", ""
    )?;
    for row in &rows {
        writeln!(
            out,
            "| {:<34} | {:>10.1} | {:>10.1} | {:>10.2}x |",
            row.what,
            row.steady as f64 / 1e6,
            row.peak as f64 / 1e6,
            row.peak as f64 / row.steady as f64
        )?;
    }
    drop(out);
    for row in rows.iter().filter(|row| row.what.starts_with("in place")) {
        let ratio = row.peak as f64 / row.steady as f64;
        anyhow::ensure!(
            ratio < 1.3,
            "{}: peak {ratio:.2}x steady, over the 1.3x promise",
            row.what
        );
    }
    Ok(())
}
