//! Describes one reconcile as the flight recorder keeps it and `/debug/reconciles` serves it.

use serde::{Deserialize, Serialize};

use super::trigger::{EventType, Reason, Trigger};

/// One reconcile of an object: why it ran, when, how long, how it ended, what it wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Reconciled {
    /// When it started, in milliseconds since the Unix epoch.
    pub(crate) started_ms: u64,
    /// How long the key waited in the queue since its first trigger, in milliseconds.
    pub(crate) queued_ms: u64,
    /// How long the reconcile ran, in milliseconds.
    pub(crate) ran_ms: u64,
    pub(crate) result: Ended,
    /// Every trigger coalesced into it, oldest first.
    pub(crate) triggers: Vec<TriggerRecord>,
    /// Triggers beyond the bound, counted only.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) more_triggers: u32,
    /// The writes it made, in order.
    pub(crate) writes: Vec<WriteRecord>,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How a reconcile ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "outcome")]
pub(crate) enum Ended {
    /// Succeeded; runs again on the next change.
    #[default]
    Ok,
    /// Succeeded and asked to run again now (rate limited), or hit a conflict.
    Requeue,
    /// Succeeded and asked to run again after `delay_ms`.
    #[serde(rename_all = "camelCase")]
    RequeueAfter { delay_ms: u64 },
    /// Failed with `message` (the API's message, for an API error).
    Error { message: String },
    /// Cut off by the controller's reconcile timeout.
    Timeout { message: String },
    /// Panicked with `message`.
    Panic { message: String },
}

/// A trigger as recorded: plain fields, for JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TriggerRecord {
    pub(crate) reason: Reason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) event: Option<EventType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) resource_version: Option<String>,
}

impl From<&Trigger> for TriggerRecord {
    fn from(trigger: &Trigger) -> Self {
        Self {
            reason: trigger.reason(),
            event: trigger.event_type(),
            kind: trigger.kind().map(str::to_owned),
            namespace: trigger
                .object()
                .and_then(|k| k.namespace())
                .map(str::to_owned),
            name: trigger.object().map(|k| k.name().to_owned()),
            resource_version: trigger.resource_version(),
        }
    }
}

/// What a write was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Verb {
    Create,
    Update,
    Patch,
    /// A server-side apply.
    Apply,
    Delete,
}

/// One write a reconcile made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WriteRecord {
    pub(crate) verb: Verb,
    /// The kind (from the answer), or the resource's plural when the write failed.
    pub(crate) kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) namespace: Option<String>,
    pub(crate) name: String,
    /// Whether it wrote the `status` subresource.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) status: bool,
    /// The HTTP status code of the answer.
    pub(crate) code: u16,
    /// For an apply of an existing object: the fields that changed, as bounded JSON (see the
    /// recorder's docs on which diffs are kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) diff: Option<String>,
}
