//! Writes an object's status subresource only when it differs from the status the object has.

use std::fmt::Debug;
use std::sync::Arc;

use kube::Resource;
use kube::core::object::HasStatus;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::conditions::now;
use super::diff::same;
use super::{ConditionStatus, Error, Operation, Written};
use crate::controller::{Context, target_of};
use crate::controller::{INITIAL_REASON, Report, reported_status};

impl<K> Context<K>
where
    K: Resource + HasStatus + Serialize + DeserializeOwned + Clone + Debug,
    K::Status: Serialize,
{
    /// Makes `status` the status of `obj` (as read, e.g. the object being reconciled), and
    /// returns the object as the write left it: [`Operation::Updated`] with the API server's
    /// answer, or [`Operation::Unchanged`] with `obj` when it already had that status (nothing is
    /// sent). To write the status again, start from the returned object: its resourceVersion is
    /// the new one. The watch event of the write does not reconcile the object again. To report
    /// the reconcile's outcome on the controller's condition in the same write, use
    /// [`report`](Self::report) or [`report_status`](Self::report_status).
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
    /// A status with a `conditions` field that lacks the controller's condition gets it
    /// `Unknown` with reason `Reconciling`, its first state (unless
    /// [`initial_condition`](crate::controller::Controller::initial_condition) is off).
    ///
    /// # Errors
    /// [`Error::Forbidden`] naming the missing permission (`patch` on `<plural>/status`);
    /// [`Error::Api`] for any other refusal, e.g. 409 Conflict or 422 Invalid.
    pub async fn patch_status(&self, obj: &K, status: &K::Status) -> Result<Written<K>, Error> {
        let desired = self.status_json("desired", obj, status)?;
        self.write_status(obj, desired).await
    }

    /// Writes `status` as the status of `obj` with the controller's condition set as
    /// [`report`](Self::report) sets it, in one status write: for a status with fields of its
    /// own to set (start from `obj`'s).
    ///
    /// # Errors
    /// As [`patch_status`](Self::patch_status).
    pub async fn report_status(
        &self,
        obj: &K,
        status: &K::Status,
        holds: impl Into<ConditionStatus>,
        reason: &str,
        message: impl Into<String>,
    ) -> Result<Written<K>, Error> {
        let mut desired = self.status_json("desired", obj, status)?;
        let message = message.into();
        let report = Report {
            condition: self.condition(),
            status: holds.into().as_str(),
            reason,
            message: &message,
            only_if_missing: false,
            observes: true,
        };
        set_condition(&mut desired, obj.meta().generation, &report);
        self.write_status(obj, desired).await
    }

    /// The status `value` of `obj` as JSON (`what` names it in an error).
    fn status_json(
        &self,
        what: &str,
        obj: &K,
        value: &impl Serialize,
    ) -> Result<serde_json::Value, Error> {
        serde_json::to_value(value).map_err(|source| Error::Json {
            what: format!(
                "the {what} status of {} {}",
                self.kind().name(),
                obj.meta().name.as_deref().unwrap_or_default()
            ),
            source,
        })
    }

    /// Makes `desired` (stamped with `obj`'s generation, and with the condition's first state
    /// where it lacks the controller's condition) the status of `obj`, if it differs.
    async fn write_status(
        &self,
        obj: &K,
        mut desired: serde_json::Value,
    ) -> Result<Written<K>, Error> {
        crate::controller::note_status_written();
        let meta = obj.meta();
        let name = meta.name.as_deref().unwrap_or_default();
        let current = self.status_json("current", obj, &obj.status())?;
        fill_observed_generation(&mut desired, meta.generation);
        // Only a status with a `conditions` field: the API server drops one its schema lacks.
        let has_conditions = desired.get("conditions").is_some();
        if has_conditions && self.reporting().starts_unknown(self.kind()) {
            let report = Report {
                condition: self.condition(),
                status: ConditionStatus::Unknown.as_str(),
                reason: INITIAL_REASON,
                message: "",
                only_if_missing: true,
                observes: true,
            };
            set_condition(&mut desired, meta.generation, &report);
        }
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
        let previous = Some(Arc::new(obj.clone()));
        Ok(Written::new(Arc::new(written), Operation::Updated).with_previous(previous))
    }
}

impl<K> Context<K>
where
    K: Resource + HasStatus + Serialize + DeserializeOwned + Clone + Debug,
    K::Status: Serialize + Clone + Default,
{
    /// Reports the outcome of a reconcile on `obj`'s status: the controller's condition
    /// ([`Context::condition`], `Ready` unless it names another) set to `holds` (`true`, `false`
    /// or a [`ConditionStatus`]) with `reason` (`CamelCase`) and `message`, and
    /// `observedGeneration` set to `obj`'s generation, in **one** status write, as
    /// [`patch_status`](Self::patch_status) writes it: nothing is sent when nothing changes,
    /// and the returned [`Written`] says whether it did. The condition's transition time moves
    /// only when its status does. Failures need no call: a failed reconcile sets the condition
    /// `False` with the error's reason. To set fields of the status too, use
    /// [`report_status`](Self::report_status).
    ///
    /// # Errors
    /// As [`patch_status`](Self::patch_status).
    pub async fn report(
        &self,
        obj: &K,
        holds: impl Into<ConditionStatus>,
        reason: &str,
        message: impl Into<String>,
    ) -> Result<Written<K>, Error> {
        let status = obj.status().cloned().unwrap_or_default();
        (self.report_status(obj, &status, holds, reason, message)).await
    }

    /// Reports success: [`report`](Self::report) with the condition `True`.
    ///
    /// # Errors
    /// As [`patch_status`](Self::patch_status).
    pub async fn succeed(
        &self,
        obj: &K,
        reason: &str,
        message: impl Into<String>,
    ) -> Result<Written<K>, Error> {
        self.report(obj, true, reason, message).await
    }
}

/// Sets the report's condition in the `conditions` of `status` (a status as JSON) for
/// `generation`, as a failure report sets it (see `reported_status`); a status without room for
/// a condition list stays as it is.
fn set_condition(status: &mut serde_json::Value, generation: Option<i64>, report: &Report<'_>) {
    let object = json!({ "metadata": { "generation": generation }, "status": status });
    let Some(reported) = reported_status(&object, report, now()) else {
        return;
    };
    if let (Some(status), Some(conditions)) = (status.as_object_mut(), reported.get("conditions")) {
        status.insert("conditions".into(), conditions.clone());
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
