//! After an outage, an informer waiting out a long backoff retries as soon as another reaches the
//! server again, not when its own backoff ends.

use std::time::Duration;

use http::StatusCode;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;

use super::config_map;
use crate::informer::{Config, Factory, SharedInformer, WatchList};
use crate::testing::fake::Verb;
use crate::testing::{FakeApiServer, wait_for};

/// Far longer than the test waits: an informer still in it never syncs in time.
const LONG_BACKOFF: Duration = Duration::from_secs(60);
const WAIT: Duration = Duration::from_secs(10);

/// A factory over `fake` (serving ConfigMaps and Secrets) with ConfigMaps synced and a Secrets informer whose first list found the
/// server unreachable (503) within an outage the ConfigMaps' watch saw first, now waiting out
/// [`LONG_BACKOFF`].
async fn secrets_backing_off_in_an_outage(
    fake: &FakeApiServer,
) -> anyhow::Result<(Factory, SharedInformer<Secret>)> {
    let factory = Factory::new(fake.client());
    let quick = Config::default().backoff(Duration::from_millis(50), Duration::from_millis(50));
    let config_maps = factory.informer_with(Api::<ConfigMap>::all(fake.client()), quick)?;
    config_maps.start()?;
    tokio::time::timeout(WAIT, config_maps.wait_for_sync()).await??;

    // The outage: the ConfigMaps' next watch fails first, then the Secrets' list.
    fake.fail_next(Verb::Watch, "configmaps", StatusCode::SERVICE_UNAVAILABLE);
    fake.drop_watches();
    wait_for(WAIT, "the ConfigMaps' watch failed", || {
        let unreachable = factory.connectivity().is_unreachable();
        async move { unreachable.then_some(()) }
    })
    .await?;
    fake.fail_next(Verb::List, "secrets", StatusCode::SERVICE_UNAVAILABLE);
    let slow = Config::default()
        .watch_list(WatchList::Off)
        .backoff(LONG_BACKOFF, LONG_BACKOFF);
    let secrets = factory.informer_with(Api::<Secret>::all(fake.client()), slow)?;
    secrets.start()?;
    let stats = secrets.stats();
    wait_for(WAIT, "the Secrets' first list failed", || {
        let listed = stats.list_requests();
        async move { (listed >= 1).then_some(()) }
    })
    .await?;
    Ok((factory, secrets))
}

#[tokio::test]
async fn an_informer_in_backoff_retries_once_another_reaches_the_server() -> anyhow::Result<()> {
    let fake = FakeApiServer::new();
    fake.register::<ConfigMap>();
    fake.register::<Secret>();
    fake.seed(&config_map("demo", "settings"))?;
    let (factory, secrets) = secrets_backing_off_in_an_outage(&fake).await?;

    // The ConfigMaps' watch opens again after its 50 ms backoff: the server is back.
    tokio::time::timeout(WAIT, secrets.wait_for_sync())
        .await
        .map_err(|_| anyhow::anyhow!("the Secrets waited out their own backoff"))??;
    assert_eq!(
        secrets.stats().list_requests(),
        2,
        "the failed list, then the one that synced"
    );
    assert!(!factory.connectivity().is_unreachable());
    Ok(())
}
