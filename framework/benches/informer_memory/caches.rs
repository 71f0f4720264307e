//! The caches under test, each fed a complete list the way its own informer feeds it.

use std::fmt::Debug;
use std::hint::black_box;
use std::sync::Arc;

use kube::Resource;
use kube::core::ObjectList;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::watcher::Event;
use kubeward::cache::{self, ObjectKey};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::time::Instant;

use crate::fixtures::{Fixture, objects, page_size};

/// A kind both caches can hold.
pub(crate) trait Kind:
    Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Serialize + Send + Sync + 'static
{
}

impl<K> Kind for K where
    K: Resource<DynamicType = ()>
        + Clone
        + Debug
        + DeserializeOwned
        + Serialize
        + Send
        + Sync
        + 'static
{
}

/// A cache that takes complete lists and answers reads by namespace and name.
pub(crate) trait Cache {
    /// Applies one complete list of `fixture`'s objects at resourceVersion `generation`.
    fn relist(&mut self, fixture: &Fixture, generation: u64) -> anyhow::Result<()>;
    /// How many objects are cached.
    fn len(&self) -> usize;
    /// Reads every object once through `get` (a compact store then holds its hot set).
    fn read_all(&self, fixture: &Fixture) -> anyhow::Result<()> {
        let names: Vec<String> = (0..objects()).map(Fixture::name).collect();
        self.time_gets(&fixture.namespace, &names, 1).map(drop)
    }
    /// Nanoseconds per `get` of the objects `names` (in `namespace`), in that order: keys are
    /// built fresh from the names before the clock starts, the way this cache's users build
    /// them, and each pass reads them all. The fastest of `passes` passes (the machine is
    /// shared, so the fastest pass is the least disturbed one).
    fn time_gets(&self, namespace: &str, names: &[String], passes: usize) -> anyhow::Result<f64>;
}

/// Times `passes` passes of `get` over `keys`, failing if any is missing; the fastest pass's
/// nanoseconds per read.
fn time<Q>(keys: &[Q], passes: usize, get: impl Fn(&Q) -> bool) -> anyhow::Result<f64> {
    anyhow::ensure!(!keys.is_empty(), "no keys to read");
    let mut fastest = f64::INFINITY;
    for _ in 0..passes {
        let start = Instant::now();
        for key in keys {
            anyhow::ensure!(
                black_box(get(black_box(key))),
                "a cached object was not found"
            );
        }
        fastest = fastest.min(start.elapsed().as_nanos() as f64 / keys.len() as f64);
    }
    Ok(fastest)
}

/// kube-runtime's reflector store, fed the events its watcher sends on a (re)list: `Init`,
/// an `InitApply` per object of each page (decoded as one `ObjectList`, as `Api::list` does),
/// then `InitDone`, which swaps the buffered objects in.
pub(crate) struct KubeRuntime<K: Kind> {
    reader: reflector::Store<K>,
    writer: reflector::store::Writer<K>,
}

impl<K: Kind> KubeRuntime<K> {
    pub(crate) fn new() -> Self {
        let (reader, writer) = reflector::store::<K>();
        Self { reader, writer }
    }
}

impl<K: Kind> Cache for KubeRuntime<K> {
    fn relist(&mut self, fixture: &Fixture, generation: u64) -> anyhow::Result<()> {
        self.writer.apply_watcher_event(&Event::Init);
        for page in 0..objects() / page_size() {
            let list: ObjectList<K> =
                serde_json::from_str(&fixture.page(page, page_size(), generation))?;
            for obj in list.items {
                self.writer.apply_watcher_event(&Event::InitApply(obj));
            }
        }
        self.writer.apply_watcher_event(&Event::InitDone);
        Ok(())
    }

    fn len(&self) -> usize {
        self.reader.len()
    }

    fn time_gets(&self, namespace: &str, names: &[String], passes: usize) -> anyhow::Result<f64> {
        let keys: Vec<ObjectRef<K>> = names
            .iter()
            .map(|name| ObjectRef::new(name).within(namespace))
            .collect();
        time(&keys, passes, |key| self.reader.get(key).is_some())
    }
}

/// One list response with each item kept as its JSON text, as kubeward's reflector reads it.
#[derive(Deserialize)]
pub(crate) struct RawList {
    pub(crate) items: Vec<Box<RawValue>>,
}

/// A kubeward store fed the way its reflector feeds it: each page split into its items' JSON
/// texts, each item parsed and decoded on its own (managedFields stripped unless `keep_managed_fields`) and
/// applied in place; what vanished is removed at the end.
pub(crate) struct Kubeward<K> {
    store: cache::Store<K>,
    writer: cache::Writer<K>,
    strip: bool,
    page: usize,
}

impl<K: Kind> Kubeward<K> {
    /// The default store.
    pub(crate) fn new(strip: bool) -> Self {
        let (store, writer) = cache::store();
        Self {
            store,
            writer,
            strip,
            page: page_size(),
        }
    }

    /// Lists in pages of `page` objects instead of the default 500 (`Config::page_size`).
    pub(crate) fn pages_of(mut self, page: usize) -> Self {
        self.page = page;
        self
    }

    /// A compact store keeping the `hot` most recently read objects decoded. It encodes each
    /// object itself; an informer's store is handed the JSON it received instead, which holds
    /// about the same bytes (the same fields, in the server's order).
    pub(crate) fn compact(strip: bool, hot: usize) -> Self {
        let (store, writer) = kubeward::testing::compact_store(hot);
        Self {
            store,
            writer,
            strip,
            page: page_size(),
        }
    }
}

impl<K: Kind> Cache for Kubeward<K> {
    fn relist(&mut self, fixture: &Fixture, generation: u64) -> anyhow::Result<()> {
        let mut relist = self.writer.relist();
        for page in 0..objects() / self.page {
            let text = fixture.page(page, self.page, generation);
            let list: RawList = serde_json::from_str(&text)?;
            for item in list.items {
                let mut value: Value = serde_json::from_str(item.get())?;
                drop(item);
                if self.strip
                    && let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut)
                {
                    meta.remove("managedFields");
                }
                let obj = K::deserialize(value)?;
                let _ = relist.apply(Arc::new(obj));
            }
        }
        let _ = relist.finish();
        Ok(())
    }

    fn len(&self) -> usize {
        self.store.len()
    }

    fn time_gets(&self, namespace: &str, names: &[String], passes: usize) -> anyhow::Result<f64> {
        let keys: Vec<ObjectKey> = names
            .iter()
            .map(|name| ObjectKey::new(Some(namespace), name))
            .collect();
        time(&keys, passes, |key| self.store.get(key).is_some())
    }
}

/// A kubeward store read by namespace and name with [`cache::Store::get_by_name`]: no key is
/// built at all.
pub(crate) struct ByName<K>(pub(crate) Kubeward<K>);

impl<K: Kind> Cache for ByName<K> {
    fn relist(&mut self, fixture: &Fixture, generation: u64) -> anyhow::Result<()> {
        self.0.relist(fixture, generation)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn time_gets(&self, namespace: &str, names: &[String], passes: usize) -> anyhow::Result<f64> {
        time(names, passes, |name| {
            self.0.store.get_by_name(Some(namespace), name).is_some()
        })
    }
}
