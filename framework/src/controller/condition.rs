//! Sets a condition on an object's status: the controller's (`Ready` unless it names another)
//! `False` for a failed reconcile, `Unknown` on first sight, or as a reconcile reports it; and a
//! pause's `Paused`.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::Client;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::core::Request;
use serde_json::{Map, Value, json};

use crate::controller::own_writes::OwnWrites;
use crate::controller::target_of;
use crate::controller::{Cacheable, Kind};
use crate::error::chain;

/// How long the status write may take; it holds the object's key meanwhile.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads an object of `K` as JSON; captured where `K: Serialize` is known (`Controller::new`),
/// so that [`Cacheable`] need not require it of every owned and watched kind.
pub(crate) type ToJson<K> = fn(&K) -> serde_json::Result<Value>;

/// What a report writes: the condition's type, status (`True`, `False` or `Unknown`), reason
/// and message.
pub(crate) struct Report<'a> {
    pub(crate) condition: &'a str,
    pub(crate) status: &'a str,
    pub(crate) reason: &'a str,
    pub(crate) message: &'a str,
    /// Only where the object's status lacks the condition (its first state).
    pub(crate) only_if_missing: bool,
    /// Whether the status' `observedGeneration` moves to the object's generation too: a
    /// reconcile's report saw that generation; a pause did not reconcile it.
    pub(crate) observes: bool,
}

/// Sets `obj`'s condition to the report's status, reason and message, and its status'
/// `observedGeneration` to the generation reported on, by a merge patch of the status
/// subresource, unless it already says exactly that. Failures are logged, never returned. The
/// write goes through `own_writes`, so its watch event does not reconcile the object again.
///
/// When `obj` changed since it was read (409), e.g. by the controller's own finalizer write
/// before the reconcile, whose update a generation predicate filters out, the report is written
/// once more on the object as the API server has it now: otherwise a terminal failure would
/// never show.
pub(crate) async fn write<K: Cacheable>(
    client: Client,
    kind: &Kind,
    own_writes: &OwnWrites,
    to_json: ToJson<K>,
    obj: &K,
    report: &Report<'_>,
) {
    let write = |obj| write_on(client.clone(), kind, own_writes, to_json, obj, report);
    if write(obj).await != Written::Conflict {
        return;
    }
    match tokio::time::timeout(WRITE_TIMEOUT, read(client.clone(), kind, obj)).await {
        Ok(Ok(latest)) => {
            if write(&latest).await == Written::Conflict {
                tracing::debug!(
                    condition = report.condition,
                    status = report.status,
                    "the object changed again; not setting the condition"
                );
            }
        }
        Ok(Err(error)) => {
            let error = chain(&error);
            tracing::debug!(%error, "could not read the object again");
        }
        Err(_) => tracing::debug!("reading the object again timed out"),
    }
}

/// How one status write ended.
#[derive(Debug, PartialEq, Eq)]
enum Written {
    /// Written, or nothing to write, or a failure that was logged.
    Done,
    /// 409: the object changed since it was read.
    Conflict,
}

async fn write_on<K: Cacheable>(
    client: Client,
    kind: &Kind,
    own_writes: &OwnWrites,
    to_json: ToJson<K>,
    obj: &K,
    report: &Report<'_>,
) -> Written {
    let object = match to_json(obj) {
        Ok(object) => object,
        Err(error) => {
            let error = chain(&error);
            tracing::debug!(%error, "cannot read the object's status as JSON");
            return Written::Done;
        }
    };
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let Some(status) = reported_status(&object, report, now) else {
        return Written::Done;
    };
    // The resourceVersion is a precondition: the condition describes the version that failed.
    let patch = json!({
        "metadata": { "resourceVersion": obj.meta().resource_version },
        "status": status,
    });
    let ticket = own_writes.begin(target_of(kind.name(), obj.meta()));
    let outcome =
        tokio::time::timeout(WRITE_TIMEOUT, patch_status(client, kind, obj, &patch)).await;
    let condition = report.condition;
    match outcome {
        Ok(Ok(written)) => {
            ticket.finish(&written);
            Written::Done
        }
        Ok(Err(kube::Error::Api(status))) if status.code == 409 => Written::Conflict,
        // Gone since it was read: nothing to report on.
        Ok(Err(kube::Error::Api(status))) if status.code == 404 => Written::Done,
        Ok(Err(error)) => {
            let error = chain(&error);
            tracing::warn!(%error, condition, status = report.status, "could not set the condition on the object's status");
            Written::Done
        }
        Err(_) => {
            tracing::warn!(timeout = ?WRITE_TIMEOUT, condition, status = report.status, "setting the condition on the object's status timed out");
            Written::Done
        }
    }
}

/// `obj` as the API server has it now.
pub(crate) async fn read<K: Cacheable>(
    client: Client,
    kind: &Kind,
    obj: &K,
) -> Result<K, kube::Error> {
    let meta = obj.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    let request = Request::new(kind.url_path(meta.namespace.as_deref()))
        .get(name, &kube::api::GetParams::default())
        .map_err(kube::Error::BuildRequest)?;
    client.request::<K>(request).await
}

/// Patches `obj`'s status with `patch`; returns the metadata of the object written.
async fn patch_status<K: Cacheable>(
    client: Client,
    kind: &Kind,
    obj: &K,
    patch: &Value,
) -> Result<ObjectMeta, kube::Error> {
    let meta = obj.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    let request = Request::new(kind.url_path(meta.namespace.as_deref()))
        .patch_subresource(
            "status",
            name,
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .map_err(kube::Error::BuildRequest)?;
    let written: Answer = client.request(request).await?;
    Ok(written.metadata)
}

/// What the API server answers a status patch with, as far as the write's tracking needs.
#[derive(serde::Deserialize)]
struct Answer {
    metadata: ObjectMeta,
}

/// The status to merge into `object`'s: its full condition list with the report's condition set
/// to the report's status, reason and message, for the object's generation, and, when the
/// status keeps one (or has none yet), `observedGeneration` at the object's generation, so that
/// the two agree on the generation reported on. The transition time moves only when the
/// condition's status changes (as `meta.SetStatusCondition`). `None` when it already says
/// exactly that, or when the status has no room for a condition list.
pub(crate) fn reported_status(object: &Value, report: &Report<'_>, now: Time) -> Option<Value> {
    let status = match object.get("status") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(status)) => status.clone(),
        Some(_) => return None,
    };
    let mut conditions = match status.get("conditions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(conditions)) => conditions.clone(),
        Some(_) => return None,
    };
    let generation = object["metadata"]["generation"].as_i64();
    let keeps_generation =
        report.observes && (status.is_empty() || status.contains_key("observedGeneration"));
    let observed_moves = keeps_generation
        && generation.is_some()
        && status.get("observedGeneration").and_then(Value::as_i64) != generation;
    let position = conditions
        .iter()
        .position(|c| c["type"] == report.condition);
    if report.only_if_missing && position.is_some() {
        return None;
    }
    let previous = position.map(|i| conditions[i].clone());
    let same_status = previous
        .as_ref()
        .is_some_and(|c| c["status"] == report.status);
    if let Some(previous) = previous.as_ref().filter(|_| same_status)
        && previous["reason"] == report.reason
        && previous["message"] == report.message
        && previous["observedGeneration"].as_i64() == generation
        && !observed_moves
    {
        return None;
    }
    let condition = Condition {
        type_: report.condition.to_owned(),
        status: report.status.to_owned(),
        reason: report.reason.to_owned(),
        message: report.message.to_owned(),
        last_transition_time: now,
        observed_generation: generation,
    };
    let mut condition = serde_json::to_value(condition).ok()?;
    if let Some(since) = previous.filter(|_| same_status).and_then(|p| {
        p.get("lastTransitionTime")
            .filter(|t| !t.is_null())
            .cloned()
    }) {
        condition["lastTransitionTime"] = since;
    }
    match position {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
    let mut written = Map::new();
    written.insert("conditions".into(), Value::Array(conditions));
    if let (true, Some(generation)) = (keeps_generation, generation) {
        written.insert("observedGeneration".into(), generation.into());
    }
    Some(Value::Object(written))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(seconds).expect("a valid timestamp"))
    }

    fn object(status: &Value) -> Value {
        json!({ "metadata": { "name": "a", "generation": 3 }, "status": status })
    }

    fn report<'a>(reason: &'a str, message: &'a str) -> Report<'a> {
        Report {
            condition: "Ready",
            status: "False",
            reason,
            message,
            only_if_missing: false,
            observes: true,
        }
    }

    /// The condition list of a status `reported_status` would write.
    fn failed_conditions(
        object: &Value,
        reason: &str,
        message: &str,
        now: Time,
    ) -> Option<Vec<Value>> {
        let status = reported_status(object, &report(reason, message), now)?;
        Some(status["conditions"].as_array()?.clone())
    }

    #[test]
    fn a_fresh_object_gets_a_ready_false_condition_for_its_generation() {
        let fresh = json!({ "metadata": { "name": "a", "generation": 1 } });
        let conditions = failed_conditions(&fresh, "Invalid", "too long", at(0)).expect("a write");
        assert_eq!(
            conditions,
            [json!({
                "type": "Ready", "status": "False", "reason": "Invalid", "message": "too long",
                "lastTransitionTime": "1970-01-01T00:00:00Z", "observedGeneration": 1,
            })]
        );
    }

    #[test]
    fn a_true_ready_turns_false_in_place_and_other_conditions_stay() {
        let obj = object(&json!({ "conditions": [
            { "type": "Synced", "status": "True" },
            { "type": "Ready", "status": "True", "reason": "Generated", "message": "ok",
              "lastTransitionTime": "2020-01-01T00:00:00Z" },
        ]}));
        let conditions =
            failed_conditions(&obj, "ReconcileError", "boom", at(60)).expect("a write");
        assert_eq!(conditions[0], json!({ "type": "Synced", "status": "True" }));
        assert_eq!(conditions[1]["status"], "False");
        assert_eq!(conditions[1]["lastTransitionTime"], "1970-01-01T00:01:00Z");
        assert_eq!(conditions[1]["observedGeneration"], 3);
    }

    #[test]
    fn a_new_message_keeps_the_transition_time_and_the_same_one_writes_nothing() {
        let obj = object(&json!({ "conditions": [
            { "type": "Ready", "status": "False", "reason": "ReconcileError", "message": "old",
              "lastTransitionTime": "2020-01-01T00:00:00Z", "observedGeneration": 3 },
        ]}));
        let conditions = failed_conditions(&obj, "ReconcileError", "new", at(60)).expect("a write");
        assert_eq!(conditions[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        assert_eq!(conditions[0]["message"], "new");
        assert_eq!(
            failed_conditions(&obj, "ReconcileError", "old", at(60)),
            None
        );
    }

    #[test]
    fn the_failed_generation_is_the_statuss_observed_generation_too_and_the_condition_is_the_controllers()
     {
        let obj = object(&json!({ "observedGeneration": 2, "conditions": [
            { "type": "Available", "status": "True", "reason": "Up", "message": "",
              "lastTransitionTime": "2020-01-01T00:00:00Z", "observedGeneration": 2 },
        ]}));
        let available = Report {
            condition: "Available",
            status: "False",
            reason: "Invalid",
            message: "no",
            only_if_missing: false,
            observes: true,
        };
        let status = reported_status(&obj, &available, at(60)).expect("a write");
        assert_eq!(
            status["observedGeneration"], 3,
            "both say generation 3 failed"
        );
        assert_eq!(status["conditions"][0]["observedGeneration"], 3);
        assert_eq!(status["conditions"][0]["type"], "Available");
        assert_eq!(status["conditions"][0]["status"], "False");
        assert_eq!(
            status["conditions"].as_array().map(Vec::len),
            Some(1),
            "no stray Ready"
        );
        // Once written, the same failure writes nothing more.
        let written = object(&status);
        assert_eq!(reported_status(&written, &available, at(120)), None);
        // A status without the field does not get it.
        let without = object(&json!({ "conditions": [] }));
        let status = reported_status(&without, &available, at(60)).expect("a write");
        assert!(status.get("observedGeneration").is_none(), "{status}");
    }

    #[test]
    fn the_first_state_is_set_only_where_the_condition_is_missing() {
        let first = |object: &Value| {
            let unknown = Report {
                condition: "Ready",
                status: "Unknown",
                reason: "Reconciling",
                message: "",
                only_if_missing: true,
                observes: true,
            };
            reported_status(object, &unknown, at(0))
        };
        let fresh = json!({ "metadata": { "name": "a", "generation": 1 } });
        let status = first(&fresh).expect("a write");
        assert_eq!(status["conditions"][0]["status"], "Unknown");
        assert_eq!(status["conditions"][0]["reason"], "Reconciling");
        let reported = object(&json!({ "conditions": [
            { "type": "Ready", "status": "True", "reason": "Up", "message": "",
              "lastTransitionTime": "2020-01-01T00:00:00Z" },
        ]}));
        assert_eq!(
            first(&reported),
            None,
            "a condition set is never put back to Unknown"
        );
    }

    #[test]
    fn unknown_to_true_is_a_transition_and_true_again_keeps_the_time() {
        let obj = object(&json!({ "conditions": [
            { "type": "Ready", "status": "Unknown", "reason": "Reconciling", "message": "",
              "lastTransitionTime": "2020-01-01T00:00:00Z", "observedGeneration": 3 },
        ]}));
        let up = Report {
            condition: "Ready",
            status: "True",
            reason: "Applied",
            message: "ok",
            only_if_missing: false,
            observes: true,
        };
        let status = reported_status(&obj, &up, at(60)).expect("a write");
        assert_eq!(
            status["conditions"][0]["lastTransitionTime"],
            "1970-01-01T00:01:00Z"
        );
        let written = object(&status);
        assert_eq!(reported_status(&written, &up, at(120)), None);
    }

    #[test]
    fn a_status_whose_conditions_are_not_a_list_is_left_alone() {
        let obj = object(&json!({ "conditions": { "Ready": true } }));
        assert_eq!(failed_conditions(&obj, "ReconcileError", "x", at(0)), None);
    }

    #[test]
    fn a_pause_sets_its_condition_true_without_claiming_the_generation_and_a_resume_sets_it_false()
    {
        let obj = object(&json!({ "observedGeneration": 2, "conditions": [
            { "type": "Ready", "status": "True", "reason": "Generated", "message": "ok",
              "lastTransitionTime": "2020-01-01T00:00:00Z", "observedGeneration": 2 },
        ]}));
        let report = |status, reason| Report {
            condition: "Paused",
            status,
            reason,
            message: "m",
            only_if_missing: false,
            observes: false,
        };
        let paused =
            reported_status(&obj, &report("True", "PausedByAnnotation"), at(60)).expect("a write");
        assert!(
            paused.get("observedGeneration").is_none(),
            "generation 3 was not reconciled: {paused}"
        );
        assert_eq!(paused["conditions"][0]["status"], "True", "Ready stays");
        assert_eq!(paused["conditions"][1]["status"], "True");
        assert_eq!(paused["conditions"][1]["type"], "Paused");
        let written = object(&paused);
        assert_eq!(
            reported_status(&written, &report("True", "PausedByAnnotation"), at(120)),
            None
        );
        let resumed =
            reported_status(&written, &report("False", "Resumed"), at(120)).expect("a write");
        assert_eq!(resumed["conditions"][1]["status"], "False");
        assert_eq!(
            resumed["conditions"][1]["lastTransitionTime"],
            "1970-01-01T00:02:00Z"
        );
    }
}
