//! Streaming lists against the local kube-apiserver (1.20), which refuses them: `auto` falls
//! back to paginated lists once, `on` keeps asking and never lists.

use super::*;
use crate::fixtures::Log;
use kubeward::informer::WatchList;

#[tokio::test]
async fn auto_falls_back_to_paginated_lists_on_the_1_20_server_with_one_log_line()
-> anyhow::Result<()> {
    let log = Log::default();
    let _capture = log.capture("kubeward=info");
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-watchlist-auto").await?;
    let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_many(&admin, "cm", 30).await?;

    let informer = SharedInformer::new(
        Api::<ConfigMap>::namespaced(cp.client(), &ns),
        quick_retries().watch_list(WatchList::Auto),
    );
    informer.start()?;
    tokio::time::timeout(SYNC, informer.wait_for_sync()).await??;
    assert_eq!(cached_state(&informer), server_state(&admin).await?);
    let stats = informer.stats();
    assert_eq!(
        (
            stats.watch_requests(),
            stats.list_requests(),
            stats.streamed_lists()
        ),
        (2, 1, 0),
        "one refused streaming list, then one list (30 objects, one page) and its watch"
    );
    admin
        .create(&PostParams::default(), &config_map("after-sync", "1"))
        .await?;
    wait_until_converged(&informer, &admin, "the object created after the sync").await?;
    let fallback = log.lines_with("does not serve streaming lists");
    assert_eq!(fallback.len(), 1, "{fallback:?}");
    assert!(
        fallback[0].contains("422") || fallback[0].contains("resourceVersionMatch"),
        "the line says why: {}",
        fallback[0]
    );
    assert!(
        log.lines_with("WARN").is_empty(),
        "{:?}",
        log.lines_with("WARN")
    );
    informer.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn on_never_lists_and_never_syncs_on_the_1_20_server() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-watchlist-on").await?;
    let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_many(&admin, "cm", 3).await?;
    let informer = SharedInformer::new(
        Api::<ConfigMap>::namespaced(cp.client(), &ns),
        informer::Config::default()
            .backoff(Duration::from_millis(10), Duration::from_millis(50))
            .watch_list(WatchList::On),
    );
    informer.start()?;
    let stats = informer.stats();
    wait_for(SYNC, "three refused streaming lists", || async {
        (stats.watch_requests() >= 3).then_some(())
    })
    .await?;
    assert!(!informer.has_synced());
    assert_eq!(
        (stats.list_requests(), informer.store().len()),
        (0, 0),
        "no list, nothing cached"
    );
    informer.shutdown().await;
    Ok(())
}
