//! A paginated list whose continue token expires midway is finished by one list without pages.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, PostParams};

use super::config_map;
use crate::informer::{Config, SharedInformer, WatchList};
use crate::testing::{FakeApiServer, wait_for};

const WAIT: Duration = Duration::from_secs(30);
const NAMESPACE: &str = "demo";

/// The pages of 3 stop after the first (`cm-0`, `cm-1`, `cm-2`); meanwhile `cm-0` is deleted,
/// `cm-new` is created and the history is compacted, so the second page's token is expired.
/// Starting the pages over would work here, once; on a real server whose every paginated list
/// outlives compaction it never ends, so the informer must finish with one whole list (three list
/// requests in all), and a fresh relist: `cm-0` came in the first page but is gone.
#[tokio::test]
async fn an_expired_continue_token_is_followed_by_one_list_without_pages() -> anyhow::Result<()> {
    let fake = FakeApiServer::new();
    fake.register::<ConfigMap>();
    for i in 0..10 {
        fake.seed(&config_map(NAMESPACE, &format!("cm-{i}")))?;
    }
    fake.hold_list_continues();
    let api = Api::<ConfigMap>::namespaced(fake.client(), NAMESPACE);
    let config = Config::default().watch_list(WatchList::Off).page_size(3);
    let informer = SharedInformer::new(api.clone(), config);
    informer.start()?;
    wait_for(WAIT, "the second page's request", || async {
        (fake.held_list_continues() == 1).then_some(())
    })
    .await?;

    api.delete("cm-0", &DeleteParams::default()).await?;
    api.create(&PostParams::default(), &config_map(NAMESPACE, "cm-new"))
        .await?;
    fake.compact();
    fake.release_list_continues();
    tokio::time::timeout(WAIT, informer.wait_for_sync()).await??;

    let cached: BTreeSet<String> = informer
        .store()
        .list()
        .iter()
        .filter_map(|cm| cm.metadata.name.clone())
        .collect();
    let mut expected: BTreeSet<String> = (1..10).map(|i| format!("cm-{i}")).collect();
    expected.insert("cm-new".into());
    assert_eq!(cached, expected);
    let stats = informer.stats();
    assert_eq!(
        (stats.list_requests(), stats.relists()),
        (3, 1),
        "the first page, the expired second, then one whole list"
    );
    Ok(())
}
