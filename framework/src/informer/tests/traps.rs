//! Calls that once did nothing silently now work or fail where they are made.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::ObjectMeta;

use crate::informer::{Config, Error, Factory, SharedInformer};
use crate::testing::FakeApiServer;

const WAIT: Duration = Duration::from_secs(30);

fn fake_with_config_maps(names: &[&str]) -> anyhow::Result<FakeApiServer> {
    let fake = FakeApiServer::new();
    fake.register::<ConfigMap>();
    for name in names {
        fake.seed(&ConfigMap {
            metadata: ObjectMeta {
                name: Some((*name).into()),
                namespace: Some("demo".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })?;
    }
    Ok(fake)
}

fn labelled(cm: &ConfigMap) -> bool {
    cm.metadata
        .labels
        .as_ref()
        .is_some_and(|labels| labels.contains_key("transformed"))
}

#[tokio::test]
async fn a_transform_added_after_start_is_refused_and_one_added_before_changes_every_object()
-> anyhow::Result<()> {
    let fake = fake_with_config_maps(&["a", "b"])?;
    let informer = SharedInformer::new(
        Api::<ConfigMap>::namespaced(fake.client(), "demo"),
        Config::default(),
    );
    informer.add_transform(|cm: &mut ConfigMap| {
        cm.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("transformed".into(), "yes".into());
    })?;
    informer.start()?;
    let late = informer.add_transform(|cm: &mut ConfigMap| cm.data = None);
    assert!(
        matches!(late, Err(Error::Started)),
        "a transform added after start must be refused, got {late:?}"
    );
    tokio::time::timeout(WAIT, informer.wait_for_sync()).await??;
    let cached = informer.store().list();
    assert_eq!(cached.len(), 2);
    assert!(cached.iter().all(|cm| labelled(cm)), "{cached:?}");
    informer.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn informer_with_refuses_a_different_config_for_an_existing_informer_and_shares_on_the_same()
-> anyhow::Result<()> {
    let fake = fake_with_config_maps(&[])?;
    let factory = Factory::new(fake.client());
    let api = || Api::<ConfigMap>::namespaced(fake.client(), "demo");
    let slow = Config::default().resync(Duration::from_secs(60));

    let first = factory.informer_with(api(), slow.clone())?;
    let again = factory.informer_with(api(), slow.clone())?;
    assert!(first.ptr_eq(&again), "the same config shares the informer");

    let other = factory.informer_with(api(), slow.clone().resync(Duration::from_secs(5)));
    match other {
        Err(Error::ConfigConflict { resource }) => {
            assert_eq!(resource, "/api/v1/namespaces/demo/configmaps");
        }
        other => panic!("a different config for an existing informer must fail, got {other:?}"),
    }

    let selected = factory.informer_with(api(), slow.labels("app=web"))?;
    assert!(
        !selected.ptr_eq(&first),
        "other selectors are another informer"
    );
    assert!(
        factory.informer(api()).ptr_eq(&first),
        "`informer` shares whatever informer exists"
    );
    Ok(())
}
