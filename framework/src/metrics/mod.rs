//! Exposes controller-runtime's metric families, so existing dashboards and alerts work unchanged.
//!
//! Every family has controller-runtime's name, type, labels and buckets. Next to them come the
//! informers' own `kubeward_informer_*` families, the Event recorders' `kubeward_events_total`,
//! the other `kubeward_*` families and the `process_*` families. [`REFERENCE`]
//! lists them all for the book, and tests keep it in step with what is registered.

#[cfg(feature = "tls")]
pub(crate) mod auth;
mod client;
mod controller;
mod echoes;
mod events;
mod expectations;
mod informer;
mod reads;
mod reference;
mod run;
#[cfg(feature = "tls")]
mod webhook;
mod workqueue;

use std::sync::Arc;

use prometheus::{
    CounterVec, GaugeVec, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
};

pub(crate) use client::ClientMetricsLayer;
pub use client::REST_CLIENT_DURATION_BUCKETS;
pub(crate) use controller::{ControllerMetrics, Outcome};
pub(crate) use echoes::EchoMetrics;
pub(crate) use events::EventMetrics;
pub(crate) use expectations::ExpectationMetrics;
pub(crate) use informer::{Factories, InformerCollector};
pub(crate) use reads::{ReadMetrics, ReadSource};
pub use reference::{Family, Kind, REFERENCE};
#[cfg(feature = "tls")]
pub(crate) use webhook::WebhookMetrics;
pub(crate) use workqueue::WorkqueueMetrics;

use crate::informer::Factory;

/// Buckets of `controller_runtime_reconcile_time_seconds`, as controller-runtime defines them.
pub const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// Buckets of `kubeward_sharder_handover_seconds`: 10 ms to 5 min (a handover waits for the old
/// shard's in-flight reconcile).
pub(crate) const HANDOVER_BUCKETS: [f64; 12] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0, 300.0,
];

/// Buckets of `kubeward_cache_wait_seconds`: 1 ms to 10 s (a watch a little behind, up to the
/// longest timeout worth setting).
pub(crate) const CACHE_WAIT_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// Buckets of the work queue's duration histograms: 10 ns to 1000 s, ten times apart
/// (client-go's `ExponentialBuckets(10e-9, 10, 12)`).
pub const WORKQUEUE_DURATION_BUCKETS: [f64; 12] = [
    1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0,
];

/// Buckets of `controller_runtime_webhook_latency_seconds`: Prometheus's default buckets,
/// which controller-runtime's webhook latency histogram uses.
pub const WEBHOOK_LATENCY_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The families, registered in one registry; cheap to clone.
#[derive(Clone, Debug)]
pub struct Metrics {
    pub(crate) reconcile_total: IntCounterVec,
    pub(crate) reconcile_errors: IntCounterVec,
    pub(crate) terminal_errors: IntCounterVec,
    pub(crate) panics: IntCounterVec,
    pub(crate) reconcile_time: HistogramVec,
    pub(crate) max_concurrent: IntGaugeVec,
    pub(crate) active_workers: IntGaugeVec,
    pub(crate) depth: IntGaugeVec,
    pub(crate) adds: IntCounterVec,
    pub(crate) queue_duration: HistogramVec,
    pub(crate) work_duration: HistogramVec,
    pub(crate) unfinished: GaugeVec,
    pub(crate) longest: GaugeVec,
    pub(crate) retries: CounterVec,
    pub(crate) leader: IntGaugeVec,
    pub(crate) events: IntCounterVec,
    pub(crate) reads: IntCounterVec,
    pub(crate) echoes: IntCounterVec,
    pub(crate) paused: IntGaugeVec,
    pub(crate) first_reconcile: GaugeVec,
    pub(crate) backlog: IntGaugeVec,
    pub(crate) backlog_drained: GaugeVec,
    pub(crate) run_reconciles: IntGaugeVec,
    pub(crate) cache_wait: HistogramVec,
    pub(crate) cache_wait_timeouts: IntCounterVec,
    pub(crate) stale_sync_skips: IntCounterVec,
    pub(crate) expectations_pending: IntGaugeVec,
    pub(crate) expectations_timeouts: IntCounterVec,
    pub(crate) reconcile_timeouts: IntCounterVec,
    pub(crate) shards: IntGaugeVec,
    pub(crate) assignments: IntCounterVec,
    pub(crate) drains: IntCounterVec,
    pub(crate) handover: HistogramVec,
    pub(crate) shard_leases: IntGaugeVec,
    pub(crate) shard_lease_losses: IntCounterVec,
    pub(crate) webhook_requests: IntCounterVec,
    pub(crate) webhook_latency: HistogramVec,
    pub(crate) webhook_in_flight: IntGaugeVec,
    pub(crate) connections_closed: IntCounterVec,
    pub(crate) rest_requests: IntCounterVec,
    pub(crate) rest_duration: HistogramVec,
}

impl Metrics {
    /// Registers every family in `registry`.
    ///
    /// # Errors
    /// A family of the same name is already registered there.
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let metrics = Self {
            reconcile_total: counter("controller_runtime_reconcile_total")?,
            reconcile_errors: counter("controller_runtime_reconcile_errors_total")?,
            terminal_errors: counter("controller_runtime_terminal_reconcile_errors_total")?,
            panics: counter("controller_runtime_reconcile_panics_total")?,
            reconcile_time: histogram(
                "controller_runtime_reconcile_time_seconds",
                &RECONCILE_TIME_BUCKETS,
            )?,
            max_concurrent: gauge("controller_runtime_max_concurrent_reconciles")?,
            active_workers: gauge("controller_runtime_active_workers")?,
            depth: gauge("workqueue_depth")?,
            adds: counter("workqueue_adds_total")?,
            queue_duration: histogram(
                "workqueue_queue_duration_seconds",
                &WORKQUEUE_DURATION_BUCKETS,
            )?,
            work_duration: histogram(
                "workqueue_work_duration_seconds",
                &WORKQUEUE_DURATION_BUCKETS,
            )?,
            unfinished: float_gauge("workqueue_unfinished_work_seconds")?,
            longest: float_gauge("workqueue_longest_running_processor_seconds")?,
            retries: float_counter("workqueue_retries_total")?,
            leader: gauge("leader_election_master_status")?,
            events: counter("kubeward_events_total")?,
            reads: counter("kubeward_reads_total")?,
            echoes: counter("kubeward_own_write_echoes_suppressed_total")?,
            paused: gauge("kubeward_paused_objects")?,
            first_reconcile: float_gauge("kubeward_controller_first_reconcile_seconds")?,
            backlog: gauge("kubeward_controller_backlog_keys")?,
            backlog_drained: float_gauge("kubeward_controller_backlog_drained_seconds")?,
            run_reconciles: gauge("kubeward_controller_run_reconciles")?,
            cache_wait: histogram("kubeward_cache_wait_seconds", &CACHE_WAIT_BUCKETS)?,
            cache_wait_timeouts: counter("kubeward_cache_wait_timeouts_total")?,
            stale_sync_skips: counter("kubeward_controller_stale_sync_skips_total")?,
            expectations_pending: gauge("kubeward_expectations_pending")?,
            expectations_timeouts: counter("kubeward_expectations_timeouts_total")?,
            reconcile_timeouts: counter("controller_runtime_reconcile_timeouts_total")?,
            shards: gauge("kubeward_sharder_shards")?,
            assignments: counter("kubeward_sharder_assignments_total")?,
            drains: counter("kubeward_sharder_drains_total")?,
            handover: histogram("kubeward_sharder_handover_seconds", &HANDOVER_BUCKETS)?,
            shard_leases: gauge("kubeward_sharder_shard_leases")?,
            shard_lease_losses: counter("kubeward_shard_lease_losses_total")?,
            webhook_requests: counter("controller_runtime_webhook_requests_total")?,
            webhook_latency: histogram(
                "controller_runtime_webhook_latency_seconds",
                &WEBHOOK_LATENCY_BUCKETS,
            )?,
            webhook_in_flight: gauge("controller_runtime_webhook_requests_in_flight")?,
            connections_closed: counter("kubeward_serving_connections_closed_total")?,
            rest_requests: counter("rest_client_requests_total")?,
            rest_duration: histogram(
                "rest_client_request_duration_seconds",
                &REST_CLIENT_DURATION_BUCKETS,
            )?,
        };
        registry.register(Box::new(metrics.reconcile_total.clone()))?;
        registry.register(Box::new(metrics.reconcile_errors.clone()))?;
        registry.register(Box::new(metrics.terminal_errors.clone()))?;
        registry.register(Box::new(metrics.panics.clone()))?;
        registry.register(Box::new(metrics.reconcile_time.clone()))?;
        registry.register(Box::new(metrics.max_concurrent.clone()))?;
        registry.register(Box::new(metrics.active_workers.clone()))?;
        registry.register(Box::new(metrics.depth.clone()))?;
        registry.register(Box::new(metrics.adds.clone()))?;
        registry.register(Box::new(metrics.queue_duration.clone()))?;
        registry.register(Box::new(metrics.work_duration.clone()))?;
        registry.register(Box::new(metrics.unfinished.clone()))?;
        registry.register(Box::new(metrics.longest.clone()))?;
        registry.register(Box::new(metrics.retries.clone()))?;
        registry.register(Box::new(metrics.leader.clone()))?;
        registry.register(Box::new(metrics.events.clone()))?;
        registry.register(Box::new(metrics.reads.clone()))?;
        registry.register(Box::new(metrics.echoes.clone()))?;
        registry.register(Box::new(metrics.paused.clone()))?;
        registry.register(Box::new(metrics.first_reconcile.clone()))?;
        registry.register(Box::new(metrics.backlog.clone()))?;
        registry.register(Box::new(metrics.backlog_drained.clone()))?;
        registry.register(Box::new(metrics.run_reconciles.clone()))?;
        registry.register(Box::new(metrics.cache_wait.clone()))?;
        registry.register(Box::new(metrics.cache_wait_timeouts.clone()))?;
        registry.register(Box::new(metrics.stale_sync_skips.clone()))?;
        registry.register(Box::new(metrics.expectations_pending.clone()))?;
        registry.register(Box::new(metrics.expectations_timeouts.clone()))?;
        registry.register(Box::new(metrics.reconcile_timeouts.clone()))?;
        registry.register(Box::new(metrics.shards.clone()))?;
        registry.register(Box::new(metrics.assignments.clone()))?;
        registry.register(Box::new(metrics.drains.clone()))?;
        registry.register(Box::new(metrics.handover.clone()))?;
        registry.register(Box::new(metrics.shard_leases.clone()))?;
        registry.register(Box::new(metrics.shard_lease_losses.clone()))?;
        registry.register(Box::new(metrics.webhook_requests.clone()))?;
        registry.register(Box::new(metrics.webhook_latency.clone()))?;
        registry.register(Box::new(metrics.webhook_in_flight.clone()))?;
        registry.register(Box::new(metrics.connections_closed.clone()))?;
        registry.register(Box::new(metrics.rest_requests.clone()))?;
        registry.register(Box::new(metrics.rest_duration.clone()))?;
        Ok(metrics)
    }

    /// The handles of one controller; its `reconcile_total` series start at zero for every result.
    #[must_use]
    pub(crate) fn controller(&self, name: &str, concurrency: u16) -> ControllerMetrics {
        ControllerMetrics::new(self, name, concurrency)
    }

    /// Queue hooks reporting the `workqueue_*` families of the queue `name`.
    #[must_use]
    pub(crate) fn workqueue(&self, name: &str) -> WorkqueueMetrics {
        WorkqueueMetrics::new(self, name)
    }

    /// The `kubeward_paused_objects` series of `controller`, at 0.
    pub(crate) fn paused(&self, controller: &str) -> prometheus::IntGauge {
        self.paused.with_label_values(&[controller])
    }

    /// The `kubeward_events_total` series of the Event recorder of `controller`.
    pub(crate) fn events(&self, controller: &str) -> EventMetrics {
        EventMetrics::new(self, controller)
    }

    /// The `kubeward_reads_total` series of the context of `controller`.
    pub(crate) fn reads(&self, controller: &str) -> ReadMetrics {
        ReadMetrics::new(self, controller)
    }

    /// The `kubeward_expectations_*` series of `controller`, at 0.
    pub(crate) fn expectations(&self, controller: &str) -> ExpectationMetrics {
        ExpectationMetrics::new(self, controller)
    }

    /// The `kubeward_own_write_echoes_suppressed_total` series of `controller`, at 0.
    pub(crate) fn echoes(&self, controller: &str) -> EchoMetrics {
        EchoMetrics::new(self, controller)
    }

    /// The `controller_runtime_webhook_*` and `kubeward_serving_*` series of a webhook server.
    #[cfg(feature = "tls")]
    pub(crate) fn webhook(&self) -> WebhookMetrics {
        WebhookMetrics::new(self)
    }

    /// `kubeward_shard_lease_losses_total{ring}`, at zero until this replica loses its shard
    /// Lease of `ring`.
    #[cfg(feature = "sharding")]
    pub(crate) fn shard_lease_losses(&self, ring: &str) -> prometheus::IntCounter {
        self.shard_lease_losses.with_label_values(&[ring])
    }

    /// A layer for a kube client talking to the API server at `host` (`HOST:PORT`) that records
    /// its requests in the `rest_client_*` families; the [`Manager`](crate::manager::Manager)
    /// puts it on the client it builds.
    #[must_use]
    pub(crate) fn client_layer(&self, host: &str) -> ClientMetricsLayer {
        ClientMetricsLayer::new(
            self.rest_requests.clone(),
            self.rest_duration.clone(),
            host.to_owned(),
        )
    }

    /// Sets `leader_election_master_status{name}`.
    pub(crate) fn set_leader(&self, election: &str, leading: bool) {
        self.leader
            .with_label_values(&[election])
            .set(i64::from(leading));
    }
}

/// Registers the `kubeward_informer_*` families of every informer `factory` holds, read at
/// scrape time.
///
/// # Errors
/// A family of the same name is already registered in `registry`.
pub fn register_informers(
    registry: &Registry,
    factory: Arc<Factory>,
) -> Result<(), prometheus::Error> {
    register_informer_factories(registry, Arc::new(parking_lot::Mutex::new(vec![factory])))
}

/// Registers the `kubeward_informer_*` families of every informer the factories in `factories`
/// hold, read at scrape time; factories added to it later are reported too.
pub(crate) fn register_informer_factories(
    registry: &Registry,
    factories: Factories,
) -> Result<(), prometheus::Error> {
    registry.register(Box::new(InformerCollector::new(factories)))
}

/// Registers the `process_*` families (CPU, memory, file descriptors, start time) of this
/// process; on systems other than Linux there are none, and this does nothing.
///
/// # Errors
/// A family of the same name is already registered in `registry`.
#[doc(alias = "NewProcessCollector")]
pub fn register_process(registry: &Registry) -> Result<(), prometheus::Error> {
    #[cfg(target_os = "linux")]
    registry.register(Box::new(
        prometheus::process_collector::ProcessCollector::for_self(),
    ))?;
    #[cfg(not(target_os = "linux"))]
    let _ = registry;
    Ok(())
}

/// The family `name` in [`REFERENCE`], which lists every family the framework registers.
pub(super) fn family(name: &str) -> &'static Family {
    REFERENCE
        .iter()
        .find(|family| family.name == name)
        .unwrap_or_else(|| panic!("{name} is not in metrics::REFERENCE"))
}

fn opts(name: &str) -> Opts {
    Opts::new(name, family(name).help)
}

/// The families by kind, each with its name, help and label names from [`REFERENCE`].
fn counter(name: &str) -> prometheus::Result<IntCounterVec> {
    IntCounterVec::new(opts(name), family(name).labels)
}

fn float_counter(name: &str) -> prometheus::Result<CounterVec> {
    CounterVec::new(opts(name), family(name).labels)
}

fn gauge(name: &str) -> prometheus::Result<IntGaugeVec> {
    IntGaugeVec::new(opts(name), family(name).labels)
}

fn float_gauge(name: &str) -> prometheus::Result<GaugeVec> {
    GaugeVec::new(opts(name), family(name).labels)
}

fn histogram(name: &str, buckets: &[f64]) -> prometheus::Result<HistogramVec> {
    let opts = HistogramOpts::new(name, family(name).help).buckets(buckets.to_vec());
    HistogramVec::new(opts, family(name).labels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus::Encoder as _;

    /// A factory holding one ConfigMap informer that has listed once; no cluster is needed.
    fn factory_with_one_informer() -> Arc<Factory> {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let factory = Factory::new(client.clone());
        let informer = factory.informer(kube::Api::<k8s_openapi::api::core::v1::ConfigMap>::all(
            client,
        ));
        let stats = informer.stats();
        crate::informer::Stats::count(&stats.list_requests);
        stats.synced_now();
        // Answered 404 since, as when its CRD went.
        stats
            .not_served
            .store(true, std::sync::atomic::Ordering::Relaxed);
        informer.apply_quietly(k8s_openapi::api::core::v1::ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some("settings".into()),
                namespace: Some("demo".into()),
                resource_version: Some("42".into()),
                ..kube::api::ObjectMeta::default()
            },
            ..Default::default()
        });
        Arc::new(factory)
    }

    #[tokio::test]
    async fn the_reference_lists_exactly_the_registered_families() {
        let registry = Registry::new();
        let metrics = Metrics::new(&registry).unwrap();
        register_informers(&registry, factory_with_one_informer()).unwrap();
        register_process(&registry).unwrap();
        let _ = metrics.controller("demo", 2);
        let workqueue = metrics.workqueue("demo");
        // A run whose one key is done: its backlog drained (a family absent until then).
        workqueue.run().start();
        crate::queue::QueueHooks::queue_duration(
            &workqueue,
            crate::queue::Priority::LOW,
            std::time::Duration::ZERO,
        );
        crate::queue::QueueHooks::work_duration(&workqueue, std::time::Duration::ZERO);
        crate::queue::QueueHooks::unfinished_work(&workqueue, std::time::Duration::ZERO);
        let _ = metrics.events("demo");
        let reads = metrics.reads("demo");
        reads.count("configmaps", ReadSource::Cache);
        reads.waited("configmaps", std::time::Duration::from_millis(3), true);
        let _ = metrics.echoes("demo");
        let _ = metrics.paused("demo");
        let sharder = crate::sharding::SharderMetrics::new(&metrics, "demo");
        sharder.set_shards(1);
        sharder.assigned("shard-0");
        sharder.assigned_by_webhook("shard-0");
        sharder.drained("demo/a");
        sharder.handed_over("demo/a");
        sharder.set_lease_states(&[crate::sharding::ShardState::Ready]);
        let _ = metrics.shard_lease_losses("demo");
        let _ = metrics.expectations("demo");
        metrics.set_leader("demo", true);
        let webhook = metrics.webhook();
        webhook.serve("/validate");
        webhook.answered(
            "/validate",
            http::StatusCode::OK,
            std::time::Duration::from_millis(3),
        );
        let _ = webhook.closes("webhook");
        metrics
            .queue_duration
            .with_label_values(&["demo", "demo"])
            .observe(0.1);
        metrics
            .work_duration
            .with_label_values(&["demo", "demo"])
            .observe(0.1);
        metrics
            .reconcile_time
            .with_label_values(&["demo"])
            .observe(0.1);
        metrics.retries.with_label_values(&["demo", "demo"]).inc();
        metrics
            .rest_requests
            .with_label_values(&["200", "GET", "demo"])
            .inc();
        metrics
            .rest_duration
            .with_label_values(&["GET", "demo"])
            .observe(0.1);
        let mut gathered: Vec<(String, String, String)> = registry
            .gather()
            .iter()
            .map(|f| {
                let mut labels: Vec<String> = f.get_metric()[0]
                    .get_label()
                    .iter()
                    .map(|l| l.name().to_owned())
                    .collect();
                if labels.is_empty() {
                    labels.push("none".to_owned());
                }
                (
                    f.name().to_owned(),
                    format!("{:?}", f.get_field_type()).to_lowercase(),
                    labels.join(", "),
                )
            })
            .collect();
        gathered.sort();
        let mut documented: Vec<(String, String, String)> = REFERENCE
            .iter()
            .map(|family| {
                // The exposition sorts label names.
                let mut labels = family.labels.to_vec();
                labels.sort_unstable();
                if labels.is_empty() {
                    labels.push("none");
                }
                (
                    family.name.to_owned(),
                    family.kind.to_string(),
                    labels.join(", "),
                )
            })
            .collect();
        documented.sort();
        assert_eq!(gathered, documented);
    }

    #[tokio::test]
    async fn informer_families_report_the_stats_and_store_of_each_informer() {
        let registry = Registry::new();
        register_informers(&registry, factory_with_one_informer()).unwrap();
        let mut text = Vec::new();
        prometheus::TextEncoder::new()
            .encode(&registry.gather(), &mut text)
            .unwrap();
        let text = String::from_utf8(text).unwrap();
        for line in [
            r#"kubeward_informer_list_requests_total{resource="/api/v1/configmaps"} 1"#,
            r#"kubeward_informer_watch_requests_total{resource="/api/v1/configmaps"} 0"#,
            r#"kubeward_informer_relists_total{resource="/api/v1/configmaps"} 0"#,
            r#"kubeward_informer_store_objects{resource="/api/v1/configmaps"} 1"#,
            r#"kubeward_informer_decode_failures_total{resource="/api/v1/configmaps"} 0"#,
            r#"kubeward_informer_store_resource_version{resource="/api/v1/configmaps"} 42"#,
            r#"kubeward_informer_not_served{resource="/api/v1/configmaps"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "no line {line} in\n{text}");
        }
        let synced: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix(r#"kubeward_informer_last_sync_timestamp_seconds{resource="/api/v1/configmaps"} "#))
            .unwrap()
            .parse()
            .unwrap();
        assert!(synced > 1.7e9, "not a recent Unix time: {synced}");
    }

    #[tokio::test]
    async fn two_informers_of_one_resource_get_distinct_series() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let factory = Factory::new(kube::Client::try_from(config).unwrap());
        let client = factory.client().clone();
        let _typed = factory.informer(kube::Api::<ConfigMap>::namespaced(client.clone(), "demo"));
        let _metadata = factory.informer(
            kube::Api::<kube::core::PartialObjectMeta<ConfigMap>>::namespaced(client, "demo"),
        );
        let _selected = factory
            .informer_with(
                kube::Api::<ConfigMap>::namespaced(factory.client().clone(), "demo"),
                crate::informer::Config::default().labels("app=demo"),
            )
            .unwrap();
        let registry = Registry::new();
        register_informers(&registry, Arc::new(factory)).unwrap();
        let families = registry.gather();
        let objects = families
            .iter()
            .find(|f| f.name() == "kubeward_informer_store_objects")
            .unwrap();
        let mut resources: Vec<&str> = objects
            .get_metric()
            .iter()
            .map(|m| m.get_label()[0].value())
            .collect();
        resources.sort_unstable();
        assert_eq!(
            resources,
            [
                "/api/v1/namespaces/demo/configmaps",
                "/api/v1/namespaces/demo/configmaps #2",
                "/api/v1/namespaces/demo/configmaps?labelSelector=app=demo",
            ]
        );
    }

    #[test]
    fn registering_twice_in_one_registry_is_an_error() {
        let registry = Registry::new();
        Metrics::new(&registry).unwrap();
        assert!(Metrics::new(&registry).is_err());
    }
}
