//! Reports every informer of a factory in the `kubeward_informer_*` families at scrape time.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{GaugeVec, IntCounterVec, IntGaugeVec, Opts};

use crate::informer::{Factory, Observed};

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
    streamed_lists: IntCounterVec,
    newest: GaugeVec,
    not_served: IntGaugeVec,
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
            lists: counter("kubeward_informer_list_requests_total"),
            watches: counter("kubeward_informer_watch_requests_total"),
            relists: counter("kubeward_informer_relists_total"),
            objects: IntGaugeVec::new(opts("kubeward_informer_store_objects"), labels)
                .expect("invariant: the informer families have valid names and labels"),
            decode_failures: counter("kubeward_informer_decode_failures_total"),
            last_sync: GaugeVec::new(
                opts("kubeward_informer_last_sync_timestamp_seconds"),
                labels,
            )
            .expect("invariant: the informer families have valid names and labels"),
            streamed_lists: counter("kubeward_informer_streamed_lists_total"),
            newest: GaugeVec::new(opts("kubeward_informer_store_resource_version"), labels)
                .expect("invariant: the informer families have valid names and labels"),
            not_served: IntGaugeVec::new(opts("kubeward_informer_not_served"), labels)
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
    fn collectors(&self) -> [&dyn Collector; 9] {
        [
            &self.lists,
            &self.watches,
            &self.relists,
            &self.objects,
            &self.decode_failures,
            &self.last_sync,
            &self.streamed_lists,
            &self.newest,
            &self.not_served,
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
        families.streamed_lists.reset();
        families.newest.reset();
        families.not_served.reset();
        // Informers of different types on one resource (typed, metadata-only, dynamic) get
        // distinct labels: ` #2`, ` #3` in the factory's stable order.
        let mut seen: HashMap<String, usize> = HashMap::new();
        for Observed {
            resource,
            stats,
            objects,
            newest,
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
            families
                .streamed_lists
                .with_label_values(label)
                .inc_by(stats.streamed_lists());
            if let Some(time) = stats.last_sync_time() {
                families.last_sync.with_label_values(label).set(time);
            }
            families
                .not_served
                .with_label_values(label)
                .set(i64::from(stats.not_served()));
            // etcd's revisions stay far below 2^53, where an f64 is still exact.
            #[expect(clippy::cast_precision_loss, reason = "see above")]
            if let Some(newest) = newest.and_then(|v| v.parse::<u64>().ok()) {
                families.newest.with_label_values(label).set(newest as f64);
            }
        }
        families
            .collectors()
            .iter()
            .flat_map(|c| c.collect())
            .collect()
    }
}

fn opts(name: &str) -> Opts {
    Opts::new(name, super::family(name).help)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Api;
    use kube::api::ObjectMeta;
    use prometheus::Encoder as _;

    use super::*;
    use crate::informer::{Config, WatchList};
    use crate::testing::FakeApiServer;

    #[test]
    fn the_informer_families_have_valid_descriptors() {
        let labels = &["resource"];
        let informer_families = super::super::REFERENCE
            .iter()
            .filter(|family| family.name.starts_with("kubeward_informer_"));
        for name in informer_families.map(|family| family.name) {
            assert!(IntCounterVec::new(opts(name), labels).is_ok(), "{name}");
            assert!(IntGaugeVec::new(opts(name), labels).is_ok(), "{name}");
            assert!(GaugeVec::new(opts(name), labels).is_ok(), "{name}");
        }
    }

    #[tokio::test]
    async fn a_streaming_list_counts_in_the_streamed_lists_family_and_a_paginated_one_does_not()
    -> anyhow::Result<()> {
        let fake = FakeApiServer::new();
        fake.register::<ConfigMap>();
        fake.seed(&ConfigMap {
            metadata: ObjectMeta {
                name: Some("settings".into()),
                namespace: Some("demo".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })?;
        let factory = Arc::new(Factory::new(fake.client()));
        let api = || Api::<ConfigMap>::namespaced(fake.client(), "demo");
        let _streamed =
            factory.informer_with(api(), Config::default().watch_list(WatchList::On))?;
        let _listed = factory.informer_with(api(), Config::default().labels("app=demo"))?;
        factory.start()?;
        tokio::time::timeout(Duration::from_secs(30), factory.wait_for_sync()).await??;

        let registry = prometheus::Registry::new();
        super::super::register_informers(&registry, Arc::clone(&factory))?;
        let mut text = Vec::new();
        prometheus::TextEncoder::new().encode(&registry.gather(), &mut text)?;
        let text = String::from_utf8(text)?;
        for line in [
            r#"kubeward_informer_streamed_lists_total{resource="/api/v1/namespaces/demo/configmaps"} 1"#,
            r#"kubeward_informer_relists_total{resource="/api/v1/namespaces/demo/configmaps"} 1"#,
            r#"kubeward_informer_streamed_lists_total{resource="/api/v1/namespaces/demo/configmaps?labelSelector=app=demo"} 0"#,
            r#"kubeward_informer_relists_total{resource="/api/v1/namespaces/demo/configmaps?labelSelector=app=demo"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "no line {line} in\n{text}");
        }
        factory.shutdown().await;
        Ok(())
    }
}
