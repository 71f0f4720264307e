//! The sharder against the fake API server: failed label writes back off and are logged once
//! per burst.

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, ObjectMeta};
use kube::{Api, ResourceExt as _};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::{KindSharder, Sharder};
use crate::informer::{self, CacheScope, Factory};
use crate::metrics::Metrics;
use crate::sharding::{RING_LABEL, SharderMetrics, shard_label};
use crate::testing::fake::Verb;
use crate::testing::{FakeApiServer, wait_for};

/// What is logged on this thread: with a current-thread runtime, every task of the test.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Log {
    fn lines(&self, level: &str) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock())
            .lines()
            .filter(|l| l.contains(level))
            .map(str::to_owned)
            .collect()
    }
}

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// The issue-41 regression: after an API server restart, 200 conflicts from a stale cache were
// 200 warnings in 8 s. Here 30 writes in a row fail with 409.
#[tokio::test(flavor = "current_thread")]
async fn a_burst_of_conflicts_is_one_warning_then_one_summary_and_is_retried_with_backoff()
-> anyhow::Result<()> {
    const OBJECTS: usize = 10;
    const CONFLICTS: usize = 30;
    let log = Log::default();
    let writer = log.clone();
    let _capture = tracing::subscriber::set_default(
        tracing_subscriber::fmt()
            .with_env_filter("kubeward=info")
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish(),
    );
    let fake = FakeApiServer::new();
    fake.register::<Lease>();
    fake.register::<ConfigMap>();
    fake.seed(&Lease {
        metadata: ObjectMeta {
            name: Some("shard-a".into()),
            namespace: Some("system".into()),
            labels: Some([(RING_LABEL.to_owned(), "ring".to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("shard-a".into()),
            lease_duration_seconds: Some(3600),
            renew_time: Some(MicroTime(Timestamp::now())),
            ..LeaseSpec::default()
        }),
    })?;
    for i in 0..OBJECTS {
        fake.seed(&ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("cm-{i}")),
                namespace: Some("apps".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })?;
    }
    for _ in 0..CONFLICTS {
        fake.fail_next(Verb::Patch, "configmaps", StatusCode::CONFLICT);
    }
    let client = fake.client();
    let factory = Arc::new(Factory::new(client.clone()));
    let leases = factory.informer_with(
        Api::<Lease>::namespaced(client.clone(), "system"),
        informer::Config::default().labels(&format!("{RING_LABEL}=ring")),
    )?;
    let registry = prometheus::Registry::new();
    let metrics = Metrics::new(&registry)?;
    let sharder = Sharder::new(
        "ring".into(),
        leases,
        vec![KindSharder::main::<ConfigMap>()],
        SharderMetrics::new(&metrics, "ring"),
        Duration::from_secs(60),
    );
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let run =
        tokio::spawn(async move { sharder.run(&factory, &CacheScope::default(), stop).await });
    let started = tokio::time::Instant::now();
    let api: Api<ConfigMap> = Api::namespaced(client, "apps");
    wait_for(
        Duration::from_secs(60),
        "every ConfigMap assigned once the conflicts are over",
        || async {
            let listed = api.list(&ListParams::default()).await.ok()?;
            listed
                .items
                .iter()
                .all(|cm| cm.labels().get(&shard_label("ring")).is_some())
                .then_some(())
        },
    )
    .await?;
    let took = started.elapsed();
    shutdown.cancel();
    run.await??;
    let warnings = log.lines("WARN");
    assert_eq!(
        warnings.len(),
        1,
        "a burst of {CONFLICTS} conflicts logged {} warnings: {warnings:#?}",
        warnings.len()
    );
    let summaries = log.lines("succeeds again after a burst");
    assert_eq!(summaries.len(), 1, "{summaries:#?}");
    assert!(
        summaries[0].contains(&format!("failed={CONFLICTS}")),
        "{summaries:#?}"
    );
    // 30 failures over 10 objects: each fails three times, waiting 250 ms, 500 ms and 1 s
    // before its retries; a controller's 5 ms base would be done in 35 ms.
    assert!(
        took >= Duration::from_millis(1750),
        "the retries came {took:?} after the first write: no backoff"
    );
    Ok(())
}
