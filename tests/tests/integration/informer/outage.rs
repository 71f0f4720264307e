//! After the API server was unreachable, an informer waiting out a long backoff is current again
//! as soon as another informer of its factory reaches the server.

use k8s_openapi::api::core::v1::Secret;

use super::*;

/// Far longer than the test waits: an informer still in it never syncs in time.
const LONG_BACKOFF: Duration = Duration::from_secs(120);
const BACK: Duration = Duration::from_secs(15);

#[tokio::test]
async fn an_informer_in_a_long_backoff_syncs_once_another_reaches_the_returned_server()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-outage").await?;
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let client = cp.client_through(&proxy);
    let factory = Factory::new(client.clone());
    let quick =
        informer::Config::default().backoff(Duration::from_millis(200), Duration::from_millis(200));
    let config_maps =
        factory.informer_with(Api::<ConfigMap>::namespaced(client.clone(), &ns), quick)?;
    config_maps.start()?;
    tokio::time::timeout(SYNC, config_maps.wait_for_sync()).await??;

    // The server goes away: the ConfigMaps' watch fails and retries, in vain.
    let watches = config_maps.stats().watch_requests();
    proxy.cut();
    let stats = config_maps.stats();
    wait_for(SYNC, "the ConfigMaps' watch to fail and retry", || {
        let retried = stats.watch_requests() >= watches + 2;
        async move { retried.then_some(()) }
    })
    .await?;
    // Secrets start during the outage: their list fails, and their backoff is long.
    let slow = informer::Config::default()
        .watch_list(informer::WatchList::Off)
        .backoff(LONG_BACKOFF, LONG_BACKOFF);
    let secrets = factory.informer_with(Api::<Secret>::namespaced(client, &ns), slow)?;
    secrets.start()?;
    let listed = secrets.stats();
    wait_for(SYNC, "the Secrets' first list to fail", || {
        let failed = listed.list_requests() >= 1;
        async move { failed.then_some(()) }
    })
    .await?;
    assert!(!secrets.has_synced(), "the server is cut off");

    proxy.restore();
    tokio::time::timeout(BACK, secrets.wait_for_sync())
        .await
        .map_err(|_| anyhow::anyhow!("the Secrets waited out their own backoff"))??;
    assert_eq!(
        listed.list_requests(),
        2,
        "the failed list, then one that synced"
    );
    factory.shutdown().await;
    Ok(())
}
