//! Adds and removes a controller's finalizer with a resourceVersion precondition.

use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::core::Request;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::json;

/// Whether `meta` carries `finalizer`.
pub(crate) fn has(meta: &ObjectMeta, finalizer: &str) -> bool {
    meta.finalizers.iter().flatten().any(|f| f == finalizer)
}

/// Adds `finalizer` to `obj`; fails with 409 Conflict if `obj` changed since it was read.
pub(crate) async fn add<K>(client: &Client, obj: &K, finalizer: &str) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Clone + std::fmt::Debug,
{
    let mut finalizers = obj.meta().finalizers.clone().unwrap_or_default();
    finalizers.push(finalizer.to_owned());
    patch_finalizers(client, obj, finalizers).await
}

/// Removes `finalizer` from `obj`; fails with 409 Conflict if `obj` changed since it was read.
pub(crate) async fn remove<K>(client: &Client, obj: &K, finalizer: &str) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Clone + std::fmt::Debug,
{
    let finalizers = obj
        .meta()
        .finalizers
        .iter()
        .flatten()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect();
    patch_finalizers(client, obj, finalizers).await
}

/// A merge patch of the finalizer list; the resourceVersion in it is a precondition.
async fn patch_finalizers<K>(
    client: &Client,
    obj: &K,
    finalizers: Vec<String>,
) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Clone + std::fmt::Debug,
{
    let meta = obj.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    let patch = json!({
        "metadata": { "finalizers": finalizers, "resourceVersion": meta.resource_version }
    });
    let request = Request::new(K::url_path(&(), meta.namespace.as_deref()))
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .map_err(kube::Error::BuildRequest)?;
    client.request::<K>(request).await
}
