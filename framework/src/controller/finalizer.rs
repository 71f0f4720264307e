//! Adds and removes a controller's finalizer with a resourceVersion precondition.

use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::core::Request;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::json;

use super::Kind;

/// Whether `meta` carries `finalizer`.
pub(crate) fn has(meta: &ObjectMeta, finalizer: &str) -> bool {
    meta.finalizers.iter().flatten().any(|f| f == finalizer)
}

/// Adds `finalizer` to `obj`, of `kind`; fails with 409 Conflict if `obj` changed since it was
/// read.
pub(crate) async fn add<K>(
    client: &Client,
    kind: &Kind,
    obj: &K,
    finalizer: &str,
) -> Result<K, kube::Error>
where
    K: Resource + DeserializeOwned + Clone + std::fmt::Debug,
{
    let mut finalizers = obj.meta().finalizers.clone().unwrap_or_default();
    finalizers.push(finalizer.to_owned());
    patch_finalizers(client, kind, obj, finalizers).await
}

/// Removes `finalizer` from `obj`, of `kind`; fails with 409 Conflict if `obj` changed since it was read.
///
/// An object that is already gone (404, e.g. another actor removed the last finalizer during
/// cleanup) needs nothing more: that is `Ok(None)`, not an error to retry.
pub(crate) async fn remove<K>(
    client: &Client,
    kind: &Kind,
    obj: &K,
    finalizer: &str,
) -> Result<Option<K>, kube::Error>
where
    K: Resource + DeserializeOwned + Clone + std::fmt::Debug,
{
    let finalizers = obj
        .meta()
        .finalizers
        .iter()
        .flatten()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect();
    match patch_finalizers(client, kind, obj, finalizers).await {
        Ok(updated) => Ok(Some(updated)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(error) => Err(error),
    }
}

/// A merge patch of the finalizer list; the resourceVersion in it is a precondition.
async fn patch_finalizers<K>(
    client: &Client,
    kind: &Kind,
    obj: &K,
    finalizers: Vec<String>,
) -> Result<K, kube::Error>
where
    K: Resource + DeserializeOwned + Clone + std::fmt::Debug,
{
    let meta = obj.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    let patch = json!({
        "metadata": { "finalizers": finalizers, "resourceVersion": meta.resource_version }
    });
    let request = Request::new(kind.url_path(meta.namespace.as_deref()))
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .map_err(kube::Error::BuildRequest)?;
    client.request::<K>(request).await
}

// The fake API server these tests use comes with the `testing` feature.
#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Api;
    use kube::api::{DeleteParams, PostParams};

    use super::*;
    use crate::testing::FakeApiServer;

    const FINALIZER: &str = "test.kubeward.dev/cleanup";

    fn guarded(name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some("default".to_owned()),
                finalizers: Some(vec![FINALIZER.to_owned(), "other.example/keep".to_owned()]),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[tokio::test]
    async fn removing_keeps_the_other_finalizers_and_a_stale_read_is_409_conflict() {
        let fake = FakeApiServer::new();
        fake.register::<ConfigMap>();
        let api: Api<ConfigMap> = Api::namespaced(fake.client(), "default");
        let read = api
            .create(&PostParams::default(), &guarded("a"))
            .await
            .unwrap();
        let updated = remove(&fake.client(), &Kind::of::<ConfigMap>(), &read, FINALIZER)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            updated.metadata.finalizers,
            Some(vec!["other.example/keep".to_owned()])
        );
        let stale = remove(
            &fake.client(),
            &Kind::of::<ConfigMap>(),
            &read,
            "other.example/keep",
        )
        .await;
        assert!(
            matches!(stale, Err(kube::Error::Api(ref s)) if s.code == 409),
            "a write from a stale read must be refused, got {stale:?}"
        );
    }

    #[tokio::test]
    async fn removing_from_an_object_that_is_already_gone_is_not_an_error() {
        let fake = FakeApiServer::new();
        fake.register::<ConfigMap>();
        let api: Api<ConfigMap> = Api::namespaced(fake.client(), "default");
        let mut read = api
            .create(&PostParams::default(), &guarded("b"))
            .await
            .unwrap();
        read.metadata.finalizers = None;
        let cleared = api
            .replace("b", &PostParams::default(), &read)
            .await
            .unwrap();
        api.delete("b", &DeleteParams::default()).await.unwrap();
        assert!(
            api.get_opt("b").await.unwrap().is_none(),
            "the object should be gone"
        );
        let gone = remove(
            &fake.client(),
            &Kind::of::<ConfigMap>(),
            &cleared,
            FINALIZER,
        )
        .await;
        assert!(
            matches!(gone, Ok(None)),
            "expected Ok(None) for a deleted object, got {gone:?}"
        );
    }
}
