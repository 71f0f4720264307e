//! Writes an object's status subresource only when it differs from the status the object has.

use std::fmt::Debug;

use kube::Resource;
use kube::api::{Patch, PatchParams};
use kube::core::Request;
use kube::core::object::HasStatus;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::Error;
use super::diff::merge_diff;
use crate::controller::Context;

impl<K> Context<K>
where
    K: Resource<DynamicType = ()> + HasStatus + Serialize + DeserializeOwned + Clone + Debug,
    K::Status: Serialize,
{
    /// Makes `status` the status of `obj` (as read, e.g. the object being reconciled), and
    /// returns whether it wrote: nothing is sent when `obj` already has that status.
    ///
    /// The write is a JSON merge patch of the status subresource holding only the difference
    /// (`null` for fields `status` no longer has) with `obj`'s resourceVersion as a precondition:
    /// fields nobody changed are not sent, so other writers keep theirs, and a status that
    /// changed since `obj` was read fails with 409 Conflict instead of being overwritten (the
    /// next reconcile sees the new state). A status edited by hand is put back, whatever its
    /// observedGeneration says.
    ///
    /// # Errors
    /// [`Error::Forbidden`] naming the missing permission (`patch` on `<plural>/status`);
    /// [`Error::Api`] for any other refusal, e.g. 409 Conflict or 422 Invalid.
    pub async fn patch_status(&self, obj: &K, status: &K::Status) -> Result<bool, Error> {
        let meta = obj.meta();
        let name = meta.name.as_deref().unwrap_or_default();
        let json = |what: &str, value: Result<serde_json::Value, serde_json::Error>| {
            value.map_err(|source| Error::Json {
                what: format!("the {what} status of {} {name}", K::kind(&())),
                source,
            })
        };
        let current = json("current", serde_json::to_value(obj.status()))?;
        let desired = json("desired", serde_json::to_value(status))?;
        let Some(change) = merge_diff(&current, &desired) else {
            return Ok(false);
        };
        let patch = json!({
            "metadata": { "resourceVersion": meta.resource_version },
            "status": change,
        });
        let namespace = meta.namespace.as_deref();
        let fail = |e| Error::request::<K>("patch", Some("status"), namespace, name, e);
        let request = Request::new(K::url_path(&(), namespace))
            .patch_subresource("status", name, &PatchParams::default(), &Patch::Merge(&patch))
            .map_err(|e| fail(kube::Error::BuildRequest(e)))?;
        self.client().request_text(request).await.map_err(fail)?;
        Ok(true)
    }
}
