//! Sets a failed object's `Ready` condition to `False`, and recognises the update that write causes.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Patch, PatchParams};
use kube::core::Request;
use kube::{Client, Resource};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::cache::ObjectKey;
use crate::controller::{Cacheable, Kind};

/// How long the status write may take; it holds the object's key meanwhile.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// The condition a failure sets.
const READY: &str = "Ready";

/// Reads an object of `K` as JSON; captured where `K: Serialize` is known (`Controller::new`),
/// so that [`Cacheable`] need not require it of every owned and watched kind.
pub(crate) type ToJson<K> = fn(&K) -> serde_json::Result<Value>;

/// Status writes in flight or done, whose watch event must not trigger another reconcile: a
/// controller that reacted to its own error report would run a terminal failure twice.
pub(crate) struct Echoes<K> {
    to_json: ToJson<K>,
    expected: Mutex<HashMap<ObjectKey, Expected>>,
}

impl<K> std::fmt::Debug for Echoes<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Echoes")
            .field("expected", &self.expected.lock().len())
            .finish_non_exhaustive()
    }
}

/// What the update caused by one status write looks like.
#[derive(Debug)]
struct Expected {
    /// The resourceVersion the write started from (and required, as a precondition).
    from: String,
    reason: String,
    message: String,
}

impl<K: Resource> Echoes<K> {
    /// Tracks status writes of objects that `to_json` reads.
    pub(crate) fn new(to_json: ToJson<K>) -> Self {
        Self {
            to_json,
            expected: Mutex::default(),
        }
    }

    /// Whether the update `old` → `new` only carries the Ready condition this controller wrote
    /// after a failure; if so it is consumed, and the caller ignores the update.
    pub(crate) fn is_echo(&self, old: &K, new: &K) -> bool {
        let mut expected = self.expected.lock();
        if expected.is_empty() {
            return false;
        }
        let key = ObjectKey::of(new);
        let Some(entry) = expected.get(&key) else {
            return false;
        };
        let (old_rv, new_rv) = (version(old), version(new));
        if new_rv == entry.from {
            // The update that led to the failed version, delivered late: keep waiting.
            return false;
        }
        let Some(entry) = expected.remove(&key) else {
            return false;
        };
        drop(expected);
        old_rv == entry.from && only_ready_changed((self.to_json)(old), (self.to_json)(new), &entry)
    }

    fn expect(&self, key: ObjectKey, expected: Expected) {
        self.expected.lock().insert(key, expected);
    }

    fn forget(&self, key: &ObjectKey) {
        self.expected.lock().remove(key);
    }
}

/// Whether failures of kind `K` go on its status: custom resources only (their group has a dot
/// and is not a Kubernetes one), since built-in kinds' conditions belong to Kubernetes'
/// own controllers (a Pod's `Ready` is the kubelet's).
pub(crate) fn applies(kind: &Kind) -> bool {
    kind.is_custom()
}

/// Sets `obj`'s Ready condition to False with `reason` and `message` by a merge patch of the
/// status subresource, unless it already says exactly that. Failures are logged, never returned.
///
/// When `obj` changed since it was read (409), e.g. by the controller's own finalizer write
/// before the reconcile, whose update a generation predicate filters out, the report is written
/// once more on the object as the API server has it now: otherwise a terminal failure would
/// never show.
pub(super) async fn write<K: Cacheable>(
    client: Client,
    kind: &Kind,
    echoes: &Echoes<K>,
    obj: &K,
    reason: &str,
    message: &str,
) {
    if write_on(client.clone(), kind, echoes, obj, reason, message).await != Written::Conflict {
        return;
    }
    match tokio::time::timeout(WRITE_TIMEOUT, read(client.clone(), kind, obj)).await {
        Ok(Ok(latest)) => {
            if write_on(client, kind, echoes, &latest, reason, message).await == Written::Conflict {
                tracing::debug!("the object changed again; not setting Ready=False");
            }
        }
        Ok(Err(error)) => tracing::debug!(%error, "could not read the object again"),
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
    echoes: &Echoes<K>,
    obj: &K,
    reason: &str,
    message: &str,
) -> Written {
    let object = match (echoes.to_json)(obj) {
        Ok(object) => object,
        Err(error) => {
            tracing::debug!(%error, "cannot read the object's status as JSON");
            return Written::Done;
        }
    };
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let Some(conditions) = failed_conditions(&object, reason, message, now) else {
        return Written::Done;
    };
    let key = ObjectKey::of(obj);
    let from = version(obj);
    // The resourceVersion is a precondition: the condition describes the version that failed.
    let patch = json!({
        "metadata": { "resourceVersion": from },
        "status": { "conditions": conditions },
    });
    echoes.expect(
        key.clone(),
        Expected {
            from,
            reason: reason.to_owned(),
            message: message.to_owned(),
        },
    );
    let outcome =
        tokio::time::timeout(WRITE_TIMEOUT, patch_status(client, kind, obj, &patch)).await;
    match outcome {
        Ok(Ok(())) => Written::Done,
        Ok(Err(kube::Error::Api(status))) if status.code == 409 => {
            echoes.forget(&key);
            Written::Conflict
        }
        Ok(Err(kube::Error::Api(status))) if status.code == 404 => {
            // Gone since it was read: nothing to report on.
            echoes.forget(&key);
            Written::Done
        }
        Ok(Err(error)) => {
            echoes.forget(&key);
            tracing::warn!(%error, "could not set Ready=False on the object's status");
            Written::Done
        }
        Err(_) => {
            echoes.forget(&key);
            tracing::warn!(timeout = ?WRITE_TIMEOUT, "setting Ready=False on the object's status timed out");
            Written::Done
        }
    }
}

/// `obj` as the API server has it now.
async fn read<K: Cacheable>(client: Client, kind: &Kind, obj: &K) -> Result<K, kube::Error> {
    let meta = obj.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    let request = Request::new(kind.url_path(meta.namespace.as_deref()))
        .get(name, &kube::api::GetParams::default())
        .map_err(kube::Error::BuildRequest)?;
    client.request::<K>(request).await
}

async fn patch_status<K: Cacheable>(
    client: Client,
    kind: &Kind,
    obj: &K,
    patch: &Value,
) -> Result<(), kube::Error> {
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
    client.request::<Value>(request).await.map(drop)
}

/// The object's full condition list with Ready set to False (`reason`, `message`, the object's
/// generation); the transition time moves only when Ready was not False already. `None` when
/// Ready already says exactly that, or when the status has no room for a condition list.
pub(super) fn failed_conditions(
    object: &Value,
    reason: &str,
    message: &str,
    now: Time,
) -> Option<Vec<Value>> {
    let mut conditions = match object.get("status") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(status)) => match status.get("conditions") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(conditions)) => conditions.clone(),
            Some(_) => return None,
        },
        Some(_) => return None,
    };
    let generation = object["metadata"]["generation"].as_i64();
    let position = conditions.iter().position(|c| c["type"] == READY);
    let previous = position.map(|i| conditions[i].clone());
    let was_false = previous.as_ref().is_some_and(|c| c["status"] == "False");
    if let Some(previous) = previous.as_ref().filter(|_| was_false)
        && previous["reason"] == reason
        && previous["message"] == message
        && previous["observedGeneration"].as_i64() == generation
    {
        return None;
    }
    let condition = Condition {
        type_: READY.to_owned(),
        status: "False".to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        last_transition_time: now,
        observed_generation: generation,
    };
    let mut condition = serde_json::to_value(condition).ok()?;
    if let Some(since) = previous.filter(|_| was_false).and_then(|p| {
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
    Some(conditions)
}

fn version<K: Resource>(obj: &K) -> String {
    obj.meta().resource_version.clone().unwrap_or_default()
}

/// Whether `new` differs from `old` only in what a status write of `expected` changes: the
/// resourceVersion, managed fields, and a Ready condition that is False with its reason and message.
fn only_ready_changed(
    old: serde_json::Result<Value>,
    new: serde_json::Result<Value>,
    expected: &Expected,
) -> bool {
    let (Ok(old), Ok(new)) = (old, new) else {
        return false;
    };
    let (mut old, old_conditions) = split(old);
    let (mut new, new_conditions) = split(new);
    for object in [&mut old, &mut new] {
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
            meta.remove("managedFields");
        }
    }
    let others = |conditions: &[Value]| -> Vec<Value> {
        conditions
            .iter()
            .filter(|c| c["type"] != READY)
            .cloned()
            .collect()
    };
    let ready = new_conditions.iter().find(|c| c["type"] == READY);
    old == new
        && others(&old_conditions) == others(&new_conditions)
        && ready.is_some_and(|c| {
            c["status"] == "False"
                && c["reason"] == *expected.reason
                && c["message"] == *expected.message
        })
}

/// `object` without its status' conditions (an absent or empty status counts as `{}`), and them.
fn split(mut object: Value) -> (Value, Vec<Value>) {
    let mut status = match object.get_mut("status").map(Value::take) {
        Some(Value::Object(status)) => status,
        _ => Map::new(),
    };
    let conditions = match status.remove("conditions") {
        Some(Value::Array(conditions)) => conditions,
        _ => Vec::new(),
    };
    if let Some(object) = object.as_object_mut() {
        object.insert("status".into(), Value::Object(status));
    }
    (object, conditions)
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
    fn a_status_whose_conditions_are_not_a_list_is_left_alone() {
        let obj = object(&json!({ "conditions": { "Ready": true } }));
        assert_eq!(failed_conditions(&obj, "ReconcileError", "x", at(0)), None);
    }

    #[test]
    fn custom_resources_get_conditions_and_built_in_kinds_do_not() {
        use k8s_openapi::api::apps::v1::Deployment;
        use k8s_openapi::api::core::v1::Pod;
        use k8s_openapi::api::networking::v1::Ingress;
        assert!(!applies(&Kind::of::<Pod>()));
        assert!(!applies(&Kind::of::<Deployment>()));
        assert!(!applies(&Kind::of::<Ingress>()));
    }
}
