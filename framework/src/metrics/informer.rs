//! Reports every informer of a factory in the `kubeward_informer_*` families at scrape time.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{GaugeVec, IntCounterVec, IntGaugeVec, Opts};

use super::REFERENCE;
use crate::informer::{Factory, Observed};

/// Where the informer families start in [`REFERENCE`].
pub(crate) const FIRST: usize = 15;

/// The factories whose informers a collector reports; more can be added after it is registered.
pub(crate) type Factories = Arc<Mutex<Vec<Arc<Factory>>>>;

/// A collector reading the informers' [`Stats`](crate::informer::Stats) and store sizes when
/// Prometheus scrapes, labelled `resource` with the informer's URL path (comma-separated paths,
/// one per namespace, for an informer over a namespace set) and selectors.
pub(crate) struct InformerCollector {
    factory: Factories,
    /// Held while one scrape refills the families, so concurrent scrapes do not mix.
    families: Mutex<Families>,
    descs: Vec<Desc>,
}

struct Families {
    lists: IntCounterVec,
    watches: IntCounterVec,
    relists: IntCounterVec,
    objects: IntGaugeVec,
    decode_failures: IntCounterVec,
    last_sync: GaugeVec,
}

impl std::fmt::Debug for InformerCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InformerCollector")
            .field("factory", &self.factory)
            .finish_non_exhaustive()
    }
}

impl InformerCollector {
    /// A collector of the informers the factories hold now and make later (a manager's, and a
    /// shard's).
    ///
    /// # Panics
    /// Never: the families' names, help texts and the one label are constants, and
    /// `IntCounterVec::new` and the like fail only on an invalid metric or label name, an empty
    /// help text or a duplicate label; `the_informer_families_have_valid_descriptors` (in
    /// this file) builds them all.
    #[must_use]
    pub(crate) fn new(factory: Factories) -> Self {
        // Each `expect` below: see `# Panics`.
        let labels = &["resource"];
        let counter = |i| {
            IntCounterVec::new(opts(i), labels)
                .expect("invariant: the informer families have valid names and labels")
        };
        let families = Families {
            lists: counter(FIRST),
            watches: counter(FIRST + 1),
            relists: counter(FIRST + 2),
            objects: IntGaugeVec::new(opts(FIRST + 3), labels)
                .expect("invariant: the informer families have valid names and labels"),
            decode_failures: counter(FIRST + 4),
            last_sync: GaugeVec::new(opts(FIRST + 5), labels)
                .expect("invariant: the informer families have valid names and labels"),
        };
        let descs = families
            .collectors()
            .iter()
            .flat_map(|c| c.desc().into_iter().cloned())
            .collect();
        Self {
            factory,
            families: Mutex::new(families),
            descs,
        }
    }
}

impl Families {
    fn collectors(&self) -> [&dyn Collector; 6] {
        [
            &self.lists,
            &self.watches,
            &self.relists,
            &self.objects,
            &self.decode_failures,
            &self.last_sync,
        ]
    }
}

impl Collector for InformerCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let families = self.families.lock();
        families.lists.reset();
        families.watches.reset();
        families.relists.reset();
        families.objects.reset();
        families.decode_failures.reset();
        families.last_sync.reset();
        // Informers of different types on one resource (typed, metadata-only, dynamic) get
        // distinct labels: ` #2`, ` #3` in the factory's stable order.
        let mut seen: HashMap<String, usize> = HashMap::new();
        for Observed {
            resource,
            stats,
            objects,
        } in self
            .factory
            .lock()
            .iter()
            .flat_map(|factory| factory.observe())
        {
            let n = seen.entry(resource.clone()).or_default();
            *n += 1;
            let resource = if *n == 1 {
                resource
            } else {
                format!("{resource} #{n}")
            };
            let label = &[resource.as_str()];
            families
                .lists
                .with_label_values(label)
                .inc_by(stats.list_requests());
            families
                .watches
                .with_label_values(label)
                .inc_by(stats.watch_requests());
            families
                .relists
                .with_label_values(label)
                .inc_by(stats.relists());
            families
                .objects
                .with_label_values(label)
                .set(i64::try_from(objects).unwrap_or(i64::MAX));
            families
                .decode_failures
                .with_label_values(label)
                .inc_by(stats.decode_failures());
            if let Some(time) = stats.last_sync_time() {
                families.last_sync.with_label_values(label).set(time);
            }
        }
        families
            .collectors()
            .iter()
            .flat_map(|c| c.collect())
            .collect()
    }
}

fn opts(index: usize) -> Opts {
    Opts::new(REFERENCE[index].name, REFERENCE[index].help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_informer_families_have_valid_descriptors() {
        let labels = &["resource"];
        for i in FIRST..FIRST + 6 {
            assert!(IntCounterVec::new(opts(i), labels).is_ok(), "family {i}");
            assert!(IntGaugeVec::new(opts(i), labels).is_ok(), "family {i}");
            assert!(GaugeVec::new(opts(i), labels).is_ok(), "family {i}");
        }
    }
}
