//! A stricter type over a built-in kind: objects that do not decode are skipped, the rest served.

use std::borrow::Cow;

use kube::Resource;
use kube::core::NamespaceResourceScope;
use serde::{Deserialize, Deserializer};

use super::*;

/// A stricter view of `ConfigMaps`: `data.value` must hold a number.
#[derive(Clone, Debug, Deserialize)]
pub(super) struct NumberMap {
    metadata: ObjectMeta,
    data: NumberData,
}

#[derive(Clone, Debug, Deserialize)]
struct NumberData {
    #[serde(deserialize_with = "number")]
    value: u64,
}

fn number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let text = String::deserialize(deserializer)?;
    text.parse().map_err(serde::de::Error::custom)
}

impl Resource for NumberMap {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind((): &()) -> Cow<'_, str> {
        "ConfigMap".into()
    }
    fn group((): &()) -> Cow<'_, str> {
        "".into()
    }
    fn version((): &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural((): &()) -> Cow<'_, str> {
        "configmaps".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[tokio::test]
async fn an_object_that_does_not_decode_is_skipped_and_every_other_one_still_flows()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-decode").await?;
    let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    for (name, value) in [("one", "1"), ("two", "2"), ("bad", "three"), ("four", "4")] {
        admin
            .create(&PostParams::default(), &config_map(name, value))
            .await?;
    }

    let factory = Factory::new(cp.client());
    let numbers = factory.informer(Api::<NumberMap>::namespaced(cp.client(), &ns));
    factory.start()?;
    tokio::time::timeout(SYNC, factory.wait_for_sync()).await??;
    let mut cached: Vec<(String, u64)> = numbers
        .store()
        .list()
        .iter()
        .map(|n| (n.metadata.name.clone().unwrap_or_default(), n.data.value))
        .collect();
    cached.sort();
    assert_eq!(
        cached,
        [
            ("four".to_owned(), 4),
            ("one".to_owned(), 1),
            ("two".to_owned(), 2)
        ],
        "the undecodable object is skipped, the others cached"
    );
    assert_eq!(numbers.stats().decode_failures(), 1);

    // The watch keeps flowing past another bad object.
    admin
        .create(&PostParams::default(), &config_map("bad-too", "x"))
        .await?;
    admin
        .create(&PostParams::default(), &config_map("five", "5"))
        .await?;
    wait_for(SYNC, "the object created after two bad ones", || async {
        numbers
            .store()
            .get(&kubeward::cache::ObjectKey::new(Some(&ns), "five"))
            .map(drop)
    })
    .await?;
    assert_eq!(numbers.stats().decode_failures(), 2);
    factory.shutdown().await;
    Ok(())
}
