//! Writes an object's status subresource only when it differs from the status the object has.

use std::fmt::Debug;
use std::sync::Arc;

use kube::Resource;
use kube::core::object::HasStatus;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::diff::same;
use super::{Error, Operation, Written};
use crate::controller::Context;
use crate::controller::target_of;

impl<K> Context<K>
where
    K: Resource + HasStatus + Serialize + DeserializeOwned + Clone + Debug,
    K::Status: Serialize,
{
    /// Makes `status` the status of `obj` (as read, e.g. the object being reconciled), and
    /// returns the object as the write left it: [`Operation::Updated`] with the API server's
    /// answer, or [`Operation::Unchanged`] with `obj` when it already had that status (nothing is
    /// sent). Write the status again from the returned object (kubebuilder's "Unknown first,
    /// then the result"): its resourceVersion is the new one. The watch event of the write does
    /// not reconcile the object again.
    ///
    /// The write replaces the status subresource with `status` (a JSON Patch) under `obj`'s
    /// resourceVersion as a precondition: a status another writer changed since `obj` was read
    /// fails with 409 Conflict instead of being overwritten, and the next reconcile, which
    /// sees that change, builds on it. Start `status` from `obj`'s status
    /// (`obj.status.clone().unwrap_or_default()`) to keep what others wrote. A status edited by
    /// hand is put back, whatever its observedGeneration says.
    ///
    /// The status describes the generation of `obj`: a top-level `observedGeneration` field (the
    /// convention) is set to it, and so is the `observedGeneration` of each condition in
    /// `conditions` that has none (set a condition's yourself to say otherwise).
    ///
    /// # Errors
    /// [`Error::Forbidden`] naming the missing permission (`patch` on `<plural>/status`);
    /// [`Error::Api`] for any other refusal, e.g. 409 Conflict or 422 Invalid.
    pub async fn patch_status(&self, obj: &K, status: &K::Status) -> Result<Written<K>, Error> {
        let meta = obj.meta();
        let name = meta.name.as_deref().unwrap_or_default();
        let json = |what: &str, value: Result<serde_json::Value, serde_json::Error>| {
            value.map_err(|source| Error::Json {
                what: format!("the {what} status of {} {name}", self.kind().name()),
                source,
            })
        };
        let current = json("current", serde_json::to_value(obj.status()))?;
        let mut desired = json("desired", serde_json::to_value(status))?;
        fill_observed_generation(&mut desired, meta.generation);
        if same(&current, &desired) {
            return Ok(Written::new(Arc::new(obj.clone()), Operation::Unchanged));
        }
        // The resourceVersion the patched object carries is the update's precondition.
        let patch = json!([
            { "op": "add", "path": "/metadata/resourceVersion", "value": meta.resource_version },
            { "op": "add", "path": "/status", "value": desired },
        ]);
        let namespace = meta.namespace.as_deref();
        let of = self.kind().resource();
        let fail = |e| Error::request_on(of, "patch", Some("status"), namespace, name, e);
        let body = serde_json::to_vec(&patch).map_err(|source| Error::Json {
            what: format!("the status patch of {} {name}", self.kind().name()),
            source,
        })?;
        let request =
            http::Request::patch(format!("{}/{name}/status", self.kind().url_path(namespace)))
                .header(http::header::CONTENT_TYPE, "application/json-patch+json")
                .body(body)
                .map_err(|e| {
                    fail(kube::Error::BuildRequest(
                        kube::core::request::Error::BuildRequest(e),
                    ))
                })?;
        let ticket = self.own_writes().begin(target_of(self.kind().name(), meta));
        let written: K = self.client().request(request).await.map_err(fail)?;
        ticket.finish(written.meta());
        Ok(Written::new(Arc::new(written), Operation::Updated))
    }
}

/// Sets the top-level `observedGeneration` (where the status has the field) and each condition's
/// missing one to `generation`.
fn fill_observed_generation(status: &mut serde_json::Value, generation: Option<i64>) {
    let (Some(generation), Some(status)) = (generation, status.as_object_mut()) else {
        return;
    };
    if status.contains_key("observedGeneration") {
        status.insert("observedGeneration".into(), generation.into());
    }
    let conditions = status.get_mut("conditions").and_then(|c| c.as_array_mut());
    for condition in conditions.into_iter().flatten() {
        let Some(condition) = condition.as_object_mut() else {
            continue;
        };
        let open = condition
            .get("observedGeneration")
            .is_none_or(serde_json::Value::is_null);
        if open {
            condition.insert("observedGeneration".into(), generation.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::fill_observed_generation;

    #[test]
    fn the_objects_generation_is_the_statuss_and_fills_the_conditions_that_have_none() {
        let mut status = json!({
            "observedGeneration": 2,
            "conditions": [
                { "type": "Ready", "status": "True" },
                { "type": "Synced", "status": "True", "observedGeneration": 2 },
            ],
        });
        fill_observed_generation(&mut status, Some(3));
        assert_eq!(
            status,
            json!({
                "observedGeneration": 3,
                "conditions": [
                    { "type": "Ready", "status": "True", "observedGeneration": 3 },
                    { "type": "Synced", "status": "True", "observedGeneration": 2 },
                ],
            })
        );
    }

    #[test]
    fn a_status_without_the_fields_stays_as_it_is() {
        let mut status = json!({ "phase": "Done" });
        fill_observed_generation(&mut status, Some(3));
        assert_eq!(status, json!({ "phase": "Done" }));
        let mut absent = json!({ "observedGeneration": null });
        fill_observed_generation(&mut absent, None);
        assert_eq!(absent, json!({ "observedGeneration": null }));
    }
}
