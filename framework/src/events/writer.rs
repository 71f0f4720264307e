//! Drains a recorder's queue: correlates each event, then creates or patches Event objects.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use super::event_type::EventType;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::correlator::{Correlator, Decision, Key};
use crate::error::chain;
use crate::metrics::EventMetrics;

/// Events taken from the queue at once; repeats among them become one write.
const BATCH: usize = 256;
/// How long one write may take before it counts as failed (it is not retried).
const TIMEOUT: Duration = Duration::from_secs(10);

/// One recorded event, as the caller handed it over.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) regarding: ObjectReference,
    pub(crate) type_: EventType,
    pub(crate) reason: String,
    pub(crate) note: String,
    pub(crate) action: String,
    /// When it happened, for the Event's times.
    pub(crate) at: Timestamp,
    /// When it happened, for the correlator's windows.
    pub(crate) observed: Instant,
}

/// What the writer task needs, fixed when it starts.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) client: Client,
    pub(crate) controller: String,
    pub(crate) instance: String,
    pub(crate) metrics: Option<EventMetrics>,
    /// How many events may wait for the writer; more are dropped.
    pub(crate) capacity: usize,
}

/// Writes what `receiver` brings until every sender is gone.
pub(crate) async fn run(mut receiver: mpsc::Receiver<Pending>, settings: Settings) {
    let mut writer = Writer {
        settings,
        correlator: Correlator::default(),
    };
    let mut batch = Vec::with_capacity(BATCH);
    while receiver.recv_many(&mut batch, BATCH).await > 0 {
        writer.write(batch.drain(..)).await;
    }
}

struct Writer {
    settings: Settings,
    correlator: Correlator,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("controller", &self.controller)
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

/// One request: a new Event, or a new count for an existing one.
struct Write {
    name: String,
    key: Key,
    /// The first occurrence in this batch (for a new Event, the Event's content).
    first: Pending,
    /// Is this Event new?
    create: bool,
    /// The series count once written.
    count: i32,
    /// The last occurrence.
    last: Timestamp,
    /// Occurrences this write accounts for.
    occurrences: u64,
}

#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("no answer within {TIMEOUT:?}")]
    Timeout,
}

impl Writer {
    /// Correlates `batch`, merges repeats of one Event, and writes each Event once.
    async fn write(&mut self, batch: impl Iterator<Item = Pending>) {
        let mut writes: Vec<Write> = Vec::new();
        let mut by_name: HashMap<String, usize> = HashMap::new();
        for pending in batch {
            let key = Key::new(
                &pending.regarding,
                pending.type_,
                &pending.reason,
                &pending.note,
                &pending.action,
            );
            let (name, count, create) = match self.correlator.observe(&key, pending.observed) {
                Decision::Create { name } => (name, 1, true),
                Decision::Aggregate { name, count } => (name, count, false),
                Decision::Limited => {
                    self.count(|m| &m.limited, 1);
                    tracing::debug!(
                        reason = %pending.reason,
                        object = %describe(&pending.regarding),
                        "not recording an Event: its object had too many recently"
                    );
                    continue;
                }
            };
            if let Some(&i) = by_name.get(&name) {
                let write = &mut writes[i];
                write.count = count;
                write.last = pending.at;
                write.occurrences += 1;
            } else {
                by_name.insert(name.clone(), writes.len());
                writes.push(Write {
                    name,
                    key,
                    last: pending.at,
                    first: pending,
                    create,
                    count,
                    occurrences: 1,
                });
            }
        }
        for write in writes {
            self.execute(write).await;
        }
    }

    async fn execute(&mut self, write: Write) {
        let namespace = write
            .first
            .regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let api: Api<Event> = Api::namespaced(self.settings.client.clone(), &namespace);
        let result = if write.create {
            self.create(&api, &write, write.name.clone()).await
        } else {
            match self.patch(&api, &write).await {
                // The Event expired (the API server keeps them an hour) or was deleted: a new one
                // carries the count on.
                Err(WriteError::Api(kube::Error::Api(status))) if status.code == 404 => {
                    let name = super::name::event_name(&write.key.object[3]);
                    self.correlator.renamed(&write.key, name.clone());
                    self.create(&api, &write, name).await
                }
                other => other,
            }
        };
        match result {
            Ok(()) if write.create => {
                self.count(|m| &m.created, 1);
                self.count(|m| &m.aggregated, write.occurrences - 1);
            }
            Ok(()) => self.count(|m| &m.aggregated, write.occurrences),
            Err(error) => {
                // The next occurrence is a new Event, which spends a token of the object's
                // budget: a write that keeps failing is retried a bounded number of times.
                self.correlator.forget(&write.key);
                self.count(|m| &m.failed, write.occurrences);
                tracing::warn!(
                    reason = %write.first.reason,
                    object = %describe(&write.first.regarding),
                    controller = %self.settings.controller,
                    error = %chain(&error),
                    "could not record an Event"
                );
            }
        }
    }

    async fn create(
        &self,
        api: &Api<Event>,
        write: &Write,
        name: String,
    ) -> Result<(), WriteError> {
        let first = &write.first;
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: api.namespace().map(str::to_owned),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(first.at)),
            series: (write.count > 1).then_some(EventSeries {
                count: write.count,
                last_observed_time: MicroTime(write.last),
            }),
            type_: Some(first.type_.name().to_owned()),
            reason: Some(first.reason.clone()),
            action: Some(first.action.clone()),
            note: (!first.note.is_empty()).then(|| first.note.clone()),
            regarding: Some(first.regarding.clone()),
            reporting_controller: Some(self.settings.controller.clone()),
            reporting_instance: Some(self.settings.instance.clone()),
            ..Event::default()
        };
        tokio::time::timeout(TIMEOUT, api.create(&PostParams::default(), &event))
            .await
            .map_err(|_| WriteError::Timeout)??;
        Ok(())
    }

    async fn patch(&self, api: &Api<Event>, write: &Write) -> Result<(), WriteError> {
        let patch = serde_json::json!({
            "series": EventSeries {
                count: write.count,
                last_observed_time: MicroTime(write.last),
            }
        });
        let params = PatchParams::default();
        let patch = Patch::Merge(&patch);
        tokio::time::timeout(TIMEOUT, api.patch(&write.name, &params, &patch))
            .await
            .map_err(|_| WriteError::Timeout)??;
        Ok(())
    }

    fn count(
        &self,
        result: impl Fn(&crate::metrics::EventMetrics) -> &prometheus::IntCounter,
        n: u64,
    ) {
        if let Some(metrics) = &self.settings.metrics {
            result(metrics).inc_by(n);
        }
    }
}

/// `Kind namespace/name` of a reference, for logs.
fn describe(reference: &ObjectReference) -> String {
    let kind = reference.kind.as_deref().unwrap_or("object");
    let name = reference.name.as_deref().unwrap_or("");
    match reference.namespace.as_deref() {
        Some(namespace) => format!("{kind} {namespace}/{name}"),
        None => format!("{kind} {name}"),
    }
}
