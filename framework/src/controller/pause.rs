//! Pauses the reconciles of one object by an annotation, and requests one reconcile by another.
//!
//! An object whose [`PAUSED_ANNOTATION`] is `"true"` is not reconciled: the worker takes its key
//! (from its own change, a change of an object it owns, a requeue or a resync) and drops it before
//! the reconciler runs, so owned objects edited by hand are not repaired and a deleted object's
//! finalizer stays (its cleanup waits too) until the annotation is removed. For a custom resource
//! the framework sets the `Paused` condition on its status (True, who set the annotation and when,
//! as far as `managedFields` tell), and sets it False again on the first pass after the annotation
//! is gone, before the reconcile that pass runs. A new value of [`RECONCILE_REQUESTED_ANNOTATION`]
//! queues the object once even when the controller's predicate drops the change, as pausing and
//! resuming do. No reconciler code is involved: every controller gets both.

use std::collections::HashSet;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use prometheus::IntGauge;

use super::condition::{self, Report, ToJson};
use super::reporting::Reporting;
use super::{Cacheable, Context};
use crate::cache::ObjectKey;

/// The annotation that pauses an object's reconciles while its value is `"true"` (Crossplane's
/// `crossplane.io/paused`, Cluster API's `cluster.x-k8s.io/paused`):
/// `kubectl annotate KIND NAME kubeward.io/paused=true`, and `kubeward.io/paused-` to resume.
pub const PAUSED_ANNOTATION: &str = "kubeward.io/paused";

/// The annotation whose new value asks for one reconcile now, even when the controller's
/// predicate would drop the change (as `kubectl rollout restart` stamps a Deployment):
/// `kubectl annotate --overwrite KIND NAME kubeward.io/reconcile-requested-at="$(date -Is)"`.
pub const RECONCILE_REQUESTED_ANNOTATION: &str = "kubeward.io/reconcile-requested-at";

/// The status condition a paused custom resource carries: True while paused, False once resumed.
pub const PAUSED_CONDITION: &str = "Paused";

/// The `Paused` condition's reason while the annotation pauses the object.
const PAUSED_REASON: &str = "PausedByAnnotation";
/// The `Paused` condition's reason once the annotation is gone.
const RESUMED_REASON: &str = "Resumed";
/// How long reading the object for who paused it may take; it holds the object's key meanwhile.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `meta` pauses its object: its [`PAUSED_ANNOTATION`] is `"true"`.
pub(crate) fn is_paused(meta: &ObjectMeta) -> bool {
    annotation(meta, PAUSED_ANNOTATION) == Some("true")
}

/// Whether the change from `old` to `new` queues the object whatever the controller's predicate
/// says: it was paused or resumed, or a reconcile was requested with a new value.
pub(crate) fn passes_any_predicate(old: &ObjectMeta, new: &ObjectMeta) -> bool {
    is_paused(old) != is_paused(new) || requested(old, new)
}

/// Whether the change from `old` to `new` sets a new value of
/// [`RECONCILE_REQUESTED_ANNOTATION`].
pub(crate) fn requested(old: &ObjectMeta, new: &ObjectMeta) -> bool {
    let requested = annotation(new, RECONCILE_REQUESTED_ANNOTATION);
    requested.is_some() && requested != annotation(old, RECONCILE_REQUESTED_ANNOTATION)
}

fn annotation<'a>(meta: &'a ObjectMeta, name: &str) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(name).map(String::as_str)
}

/// The paused objects of one controller's kind, kept from its informer's changes for the
/// `kubeward_paused_objects` gauge.
pub(crate) struct PausedObjects {
    keys: Mutex<HashSet<ObjectKey>>,
    gauge: IntGauge,
}

impl PausedObjects {
    /// None yet; `gauge` is the controller's series.
    pub(crate) fn new(gauge: IntGauge) -> Self {
        gauge.set(0);
        Self {
            keys: Mutex::new(HashSet::new()),
            gauge,
        }
    }

    /// The object `key` is now as `meta` says.
    pub(crate) fn observe(&self, key: &ObjectKey, meta: &ObjectMeta) {
        if is_paused(meta) {
            let mut keys = self.keys.lock();
            if keys.insert(key.clone()) {
                self.gauge.set(gauge_value(keys.len()));
            }
        } else {
            self.forget(key);
        }
    }

    /// The object `key` is gone.
    pub(crate) fn forget(&self, key: &ObjectKey) {
        let mut keys = self.keys.lock();
        if keys.remove(key) {
            self.gauge.set(gauge_value(keys.len()));
        }
    }
}

fn gauge_value(len: usize) -> i64 {
    i64::try_from(len).unwrap_or(i64::MAX)
}

/// What a worker does with an object it took, before its reconciler.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Gate {
    /// Not paused: reconcile it.
    Open,
    /// Paused: leave it (its `Paused` condition is set).
    Paused,
    /// Resumed just now: its `Paused` condition was set False, so reconcile the object as the
    /// cache has it after that write.
    Resumed,
}

/// Whether the worker reconciles `obj`, after setting its `Paused` condition as its annotation
/// says, through the controller's `ctx` (custom resources, read by `to_json`, whose controller
/// reports on the status only, as `reporting` says). Never fails: a condition that cannot be
/// written is logged.
pub(super) async fn gate<K: Cacheable>(
    ctx: &Context<K>,
    reporting: &Reporting,
    to_json: ToJson<K>,
    obj: &K,
) -> Gate {
    let paused = is_paused(obj.meta());
    let reports = reporting.keeps_condition(ctx.kind());
    if paused {
        tracing::debug!(
            deleting = obj.meta().deletion_timestamp.is_some(),
            "paused by the {PAUSED_ANNOTATION} annotation: not reconciling"
        );
    }
    if !reports {
        return if paused { Gate::Paused } else { Gate::Open };
    }
    let shown = paused_condition(to_json, obj);
    match (paused, shown) {
        (true, Some(true)) => Gate::Paused,
        (true, _) => {
            mark_paused(ctx, to_json, obj).await;
            Gate::Paused
        }
        (false, Some(true)) => {
            let report = Report {
                condition: PAUSED_CONDITION,
                status: "False",
                only_if_missing: false,
                reason: RESUMED_REASON,
                message: &format!(
                    "Reconciles resumed: the {PAUSED_ANNOTATION} annotation was removed."
                ),
                observes: false,
            };
            let (client, kind, own_writes) = (ctx.client(), ctx.kind(), ctx.own_writes());
            condition::write(client, kind, own_writes, to_json, obj, &report).await;
            Gate::Resumed
        }
        (false, _) => Gate::Open,
    }
}

/// Whether `obj`'s `Paused` condition is True (`None` when it has none).
fn paused_condition<K: Cacheable>(to_json: ToJson<K>, obj: &K) -> Option<bool> {
    let object = to_json(obj).ok()?;
    let conditions = object.get("status")?.get("conditions")?.as_array()?;
    let paused = conditions.iter().find(|c| c["type"] == PAUSED_CONDITION)?;
    Some(paused["status"] == "True")
}

/// Sets `obj`'s `Paused` condition True, naming who paused it and when. The cache usually keeps
/// no `managedFields`, so they are read from the API server once per pause.
async fn mark_paused<K: Cacheable>(ctx: &Context<K>, to_json: ToJson<K>, obj: &K) {
    let (kind, own_writes) = (ctx.kind(), ctx.own_writes());
    let cached_fields = obj
        .meta()
        .managed_fields
        .as_ref()
        .is_some_and(|m| !m.is_empty());
    let read = if cached_fields {
        None
    } else {
        match tokio::time::timeout(READ_TIMEOUT, condition::read(ctx.client(), kind, obj)).await {
            Ok(Ok(latest)) => Some(latest),
            Ok(Err(error)) => {
                let error = crate::error::chain(&error);
                tracing::debug!(%error, "could not read who paused the object");
                None
            }
            Err(_) => None,
        }
    };
    let current = read.as_ref().unwrap_or(obj);
    if !is_paused(current.meta()) {
        // Resumed meanwhile: that change queues the object again.
        return;
    }
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let message = paused_message(current.meta(), &now);
    let report = Report {
        condition: PAUSED_CONDITION,
        status: "True",
        only_if_missing: false,
        reason: PAUSED_REASON,
        message: &message,
        observes: false,
    };
    condition::write(ctx.client(), kind, own_writes, to_json, current, &report).await;
}

/// The `Paused` condition's message: who set the annotation and when, from the newest
/// `managedFields` entry that owns it, or only when the framework saw it (`now`).
fn paused_message(meta: &ObjectMeta, now: &Time) -> String {
    let owner = format!("f:{PAUSED_ANNOTATION}");
    let setter = meta
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| {
            entry.fields_v1.as_ref().is_some_and(|fields| {
                fields
                    .0
                    .get("f:metadata")
                    .and_then(|m| m.get("f:annotations"))
                    .and_then(|a| a.get(&owner))
                    .is_some_and(|v| !v.is_null())
            })
        })
        .max_by_key(|entry| entry.time.as_ref().map(|t| t.0));
    let by = setter.and_then(|entry| entry.manager.as_deref());
    let at = setter
        .and_then(|entry| entry.time.as_ref())
        .unwrap_or(now)
        .0;
    match by {
        Some(manager) => format!(
            "Reconciles paused by {manager} at {at} ({PAUSED_ANNOTATION}: \"true\"); remove the annotation to resume."
        ),
        None => format!(
            "Reconciles paused since {at} ({PAUSED_ANNOTATION}: \"true\"); remove the annotation to resume."
        ),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
    use serde_json::{Value, json};

    use super::*;

    fn meta(annotations: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        }
    }

    fn at(seconds: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(seconds).expect("a valid timestamp"))
    }

    #[test]
    fn only_the_value_true_pauses() {
        assert!(is_paused(&meta(&[(PAUSED_ANNOTATION, "true")])));
        assert!(!is_paused(&meta(&[(PAUSED_ANNOTATION, "false")])));
        assert!(!is_paused(&meta(&[(PAUSED_ANNOTATION, "")])));
        assert!(!is_paused(&meta(&[])));
        assert!(!is_paused(&ObjectMeta::default()));
    }

    #[test]
    fn pausing_resuming_and_a_new_request_pass_any_predicate_and_nothing_else_does() {
        let plain = meta(&[("team", "a")]);
        let paused = meta(&[(PAUSED_ANNOTATION, "true")]);
        let asked = meta(&[(RECONCILE_REQUESTED_ANNOTATION, "2026-01-01T00:00:00Z")]);
        let asked_again = meta(&[(RECONCILE_REQUESTED_ANNOTATION, "2026-01-01T00:05:00Z")]);
        assert!(passes_any_predicate(&plain, &paused));
        assert!(passes_any_predicate(&paused, &plain));
        assert!(passes_any_predicate(&plain, &asked));
        assert!(passes_any_predicate(&asked, &asked_again));
        assert!(
            !passes_any_predicate(&asked, &asked),
            "the same request again"
        );
        assert!(
            !passes_any_predicate(&asked, &plain),
            "a request taken away"
        );
        assert!(!passes_any_predicate(&paused, &paused));
        assert!(!passes_any_predicate(&plain, &meta(&[("team", "b")])));
    }

    #[test]
    fn the_gauge_counts_each_paused_object_once_until_it_resumes_or_goes() {
        let gauge = IntGauge::new("paused", "paused").expect("a valid gauge");
        let objects = PausedObjects::new(gauge.clone());
        let (a, b) = (
            ObjectKey::new(Some("ns"), "a"),
            ObjectKey::new(Some("ns"), "b"),
        );
        let paused = meta(&[(PAUSED_ANNOTATION, "true")]);
        objects.observe(&a, &paused);
        objects.observe(&a, &paused);
        objects.observe(&b, &paused);
        assert_eq!(gauge.get(), 2);
        objects.observe(&a, &meta(&[]));
        assert_eq!(gauge.get(), 1);
        objects.forget(&b);
        objects.forget(&b);
        assert_eq!(gauge.get(), 0);
    }

    #[test]
    fn the_message_names_the_newest_manager_of_the_annotation_and_its_time() {
        let entry = |manager: &str, seconds: i64, fields: Value| ManagedFieldsEntry {
            manager: Some(manager.to_owned()),
            operation: Some("Update".to_owned()),
            time: Some(at(seconds)),
            fields_v1: Some(FieldsV1(fields)),
            ..ManagedFieldsEntry::default()
        };
        let mut m = meta(&[(PAUSED_ANNOTATION, "true")]);
        m.managed_fields = Some(vec![
            entry("helm", 10, json!({ "f:spec": { "f:content": {} } })),
            entry(
                "kubectl-annotate",
                60,
                json!({ "f:metadata": { "f:annotations": { "f:kubeward.io/paused": {} } } }),
            ),
        ]);
        assert_eq!(
            paused_message(&m, &at(120)),
            "Reconciles paused by kubectl-annotate at 1970-01-01T00:01:00Z (kubeward.io/paused: \"true\"); remove the annotation to resume."
        );
        m.managed_fields = None;
        assert_eq!(
            paused_message(&m, &at(120)),
            "Reconciles paused since 1970-01-01T00:02:00Z (kubeward.io/paused: \"true\"); remove the annotation to resume."
        );
    }
}
