//! Watch events as servers write them: a server that writes an event's object before its type.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::ObjectMeta;

use crate::informer::{Config, SharedInformer};
use crate::testing::{FakeApiServer, wait_for};

const WAIT: Duration = Duration::from_secs(30);

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("demo".into()),
            ..ObjectMeta::default()
        },
        data: Some([("value".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    }
}

#[tokio::test]
async fn events_whose_object_comes_before_their_type_are_cached_all_the_same() -> anyhow::Result<()>
{
    let fake = FakeApiServer::new().with_objects_before_types();
    fake.register::<ConfigMap>();
    fake.seed(&config_map("listed", "1"))?;
    let informer = SharedInformer::new(
        Api::<ConfigMap>::namespaced(fake.client(), "demo"),
        Config::default(),
    );
    informer.start()?;
    tokio::time::timeout(WAIT, informer.wait_for_sync()).await??;

    for n in 0..3 {
        fake.seed(&config_map(&format!("watched-{n}"), "2"))?;
    }
    let store = informer.store();
    wait_for(WAIT, "every watched object in the cache", || {
        let cached = store.list().len();
        async move { (cached == 4).then_some(()) }
    })
    .await?;
    let stats = informer.stats();
    assert_eq!(stats.decode_failures(), 0);
    assert_eq!(stats.relists(), 1, "no relist");
    assert_eq!(
        stats.watch_requests(),
        1,
        "one watch read every event, whichever order its fields came in"
    );
    informer.shutdown().await;
    Ok(())
}
