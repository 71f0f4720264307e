//! Records Kubernetes Events without ever failing or blocking the caller.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::event_type::EventType;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::instance::{self, clamp};
use super::writer::{self, Pending, Settings};
use crate::metrics::Metrics;

/// The longest `reason` and `action` Kubernetes accepts; longer ones are cut.
const MAX_REASON: usize = 128;
/// The longest `note` Kubernetes accepts (1 kB); a longer one is cut.
const MAX_NOTE: usize = 1024;
/// Events waiting to be written before new ones are dropped.
const CAPACITY: usize = 1024;

/// Writes `events.k8s.io/v1` Events for one controller, in the background; cheap to clone.
///
/// Recording is synchronous and never fails: the event goes to a bounded queue that one
/// background task per recorder drains (started by the first event, on the current tokio
/// runtime). That task aggregates identical repeats into the `series` of one Event, limits how
/// many new Events one object gets (25 at once, then one per 5 minutes, as client-go does), and
/// logs at WARN what the API server refuses. When the queue is full, or no runtime is running,
/// the event is dropped. With [`metrics`](Self::metrics) each outcome is counted in
/// `kubeward_events_total{controller, result}`.
///
/// A reconcile usually records through [`Context::event`](crate::controller::Context::event).
///
/// ```no_run
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::{Api, Client, Resource};
/// use kubeward::events::Recorder;
///
/// # #[tokio::main]
/// # async fn main() -> Result<(), kube::Error> {
/// let client = Client::try_default().await?;
/// let recorder = Recorder::new(client.clone(), "pod-janitor");
/// let pod = Api::<Pod>::namespaced(client, "default").get("web-0").await?;
/// recorder.about(pod.object_ref(&())).warning("Evicted", "the node ran out of memory");
/// recorder
///     .about(pod.object_ref(&()))
///     .action("Restart")
///     .normal("Restarted", "restarted after eviction");
/// # Ok(())
/// # }
/// ```
#[doc(alias = "EventRecorder")]
#[derive(Clone)]
pub struct Recorder {
    settings: Arc<Settings>,
    queue: Arc<Queue>,
}

/// An object about to get an Event; see [`Recorder::about`].
#[must_use = "nothing is recorded until `normal` or `warning` is called"]
#[derive(Debug)]
pub struct Subject<'a> {
    recorder: &'a Recorder,
    regarding: ObjectReference,
    action: Option<String>,
}

/// The way to the writer task, opened by the first event.
#[derive(Default)]
struct Queue {
    sender: OnceLock<mpsc::Sender<Pending>>,
    dropped: AtomicU64,
}

impl Recorder {
    /// A recorder reporting as `controller` (`reportingController`), from this pod
    /// (`reportingInstance`: `POD_NAME`, else the host name).
    ///
    /// It needs no runtime to be built; events are written once recorded within one.
    pub fn new(client: Client, controller: impl Into<String>) -> Self {
        Self {
            settings: Arc::new(Settings {
                client,
                controller: controller.into(),
                instance: instance::current(),
                metrics: None,
                capacity: CAPACITY,
            }),
            queue: Arc::default(),
        }
    }

    /// Reports as `instance` instead of the pod or host name (cut to 128 characters).
    ///
    /// Like every builder method here, call it before recording: it starts a fresh queue.
    #[must_use]
    pub fn with_instance(mut self, instance: &str) -> Self {
        Arc::make_mut(&mut self.settings).instance = clamp(instance.trim(), instance::MAX_INSTANCE);
        self.queue = Arc::default();
        self
    }

    /// Counts every event in `kubeward_events_total{controller, result}` of `metrics`.
    #[must_use]
    pub fn metrics(mut self, metrics: &Metrics) -> Self {
        let settings = Arc::make_mut(&mut self.settings);
        settings.metrics = Some(metrics.events(&settings.controller));
        self.queue = Arc::default();
        self
    }

    /// Holds at most `events` (at least 1) waiting to be written; more are dropped. Default 1024.
    #[must_use]
    pub fn capacity(mut self, events: usize) -> Self {
        Arc::make_mut(&mut self.settings).capacity = events.max(1);
        self.queue = Arc::default();
        self
    }

    /// The reporting controller.
    #[must_use]
    pub fn controller(&self) -> &str {
        &self.settings.controller
    }

    /// The reporting instance.
    #[must_use]
    pub fn instance(&self) -> &str {
        &self.settings.instance
    }

    /// Starts an Event about the object `regarding` (e.g. `obj.object_ref(&())`).
    pub fn about(&self, regarding: ObjectReference) -> Subject<'_> {
        Subject {
            recorder: self,
            regarding,
            action: None,
        }
    }

    /// Queues `pending` for the writer task, or drops and counts it.
    fn send(&self, pending: Pending) {
        let Some(sender) = self.sender() else {
            self.dropped("no tokio runtime is running to write it");
            return;
        };
        match sender.try_send(pending) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => self.dropped("the queue is full"),
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.dropped("the writer task stopped with its runtime");
            }
        }
    }

    /// The writer task's queue, started on the current runtime by the first event.
    fn sender(&self) -> Option<&mpsc::Sender<Pending>> {
        if let Some(sender) = self.queue.sender.get() {
            return Some(sender);
        }
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        Some(self.queue.sender.get_or_init(|| {
            let (sender, receiver) = mpsc::channel(self.settings.capacity);
            runtime.spawn(writer::run(receiver, (*self.settings).clone()));
            sender
        }))
    }

    /// Counts a dropped event; logs the 1st, 2nd, 4th, 8th, ... so a flood cannot flood the log.
    fn dropped(&self, why: &str) {
        if let Some(metrics) = &self.settings.metrics {
            metrics.dropped.inc();
        }
        let dropped = self.queue.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        if dropped.is_power_of_two() {
            tracing::warn!(
                controller = %self.settings.controller,
                dropped,
                "dropped an Event: {why}"
            );
        }
    }
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("controller", &self.settings.controller)
            .field("instance", &self.settings.instance)
            .finish_non_exhaustive()
    }
}

impl Subject<'_> {
    /// What the controller did or failed to do (`action`, at most 128 characters); by default
    /// the reason.
    pub fn action(mut self, action: impl Into<String>) -> Self {
        self.action = Some(action.into());
        self
    }

    /// Records a `Normal` Event: `reason` in `PascalCase` (at most 128 characters), `note` for
    /// people (at most 1 kB). Returns at once; see [`Recorder`] for what happens next.
    pub fn normal(self, reason: &str, note: impl Into<String>) {
        self.record(EventType::Normal, reason, &note.into());
    }

    /// Records a `Warning` Event, like [`normal`](Self::normal).
    pub fn warning(self, reason: &str, note: impl Into<String>) {
        self.record(EventType::Warning, reason, &note.into());
    }

    fn record(self, type_: EventType, reason: &str, note: &str) {
        let reason = clamp(reason, MAX_REASON);
        let action = clamp(self.action.as_deref().unwrap_or(&reason), MAX_REASON);
        self.recorder.send(Pending {
            regarding: self.regarding,
            type_,
            reason,
            note: clamp(note, MAX_NOTE),
            action,
            at: k8s_openapi::jiff::Timestamp::now(),
            observed: Instant::now(),
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use prometheus::Registry;

    use super::*;

    /// A client of an address where nothing listens: every write fails at once.
    fn unreachable_client() -> Client {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        Client::try_from(config).unwrap()
    }

    fn reference() -> ObjectReference {
        ObjectReference {
            kind: Some("ConfigMap".into()),
            namespace: Some("demo".into()),
            name: Some("web".into()),
            ..ObjectReference::default()
        }
    }

    fn count(metrics: &Metrics, result: &str) -> u64 {
        metrics.events.with_label_values(&["demo", result]).get()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_full_queue_drops_and_counts_events_instead_of_waiting() {
        let metrics = Metrics::new(&Registry::new()).unwrap();
        let recorder = Recorder::new(unreachable_client(), "demo")
            .metrics(&metrics)
            .capacity(1);
        // On one thread the writer cannot run before this test yields: one event fits.
        for i in 0..3 {
            recorder
                .about(reference())
                .warning("Failed", format!("attempt {i}"));
        }
        assert_eq!(count(&metrics, "dropped"), 2);
        // The one queued is written and fails; that is counted, not raised.
        tokio::time::timeout(Duration::from_secs(10), async {
            while count(&metrics, "failed") == 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the failed write to be counted within 10 s");
        assert_eq!(count(&metrics, "failed"), 1);
        assert_eq!(count(&metrics, "created"), 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_failure_loop_with_changing_notes_tries_a_bounded_number_of_writes() {
        let metrics = Metrics::new(&Registry::new()).unwrap();
        let recorder = Recorder::new(unreachable_client(), "demo").metrics(&metrics);
        let handled = || count(&metrics, "failed") + count(&metrics, "limited");
        for round in 1..=2 {
            for i in 0..100 {
                recorder
                    .about(reference())
                    .warning("Failed", format!("round {round}, attempt {i}: refused"));
            }
            tokio::time::timeout(Duration::from_secs(30), async {
                while handled() < round * 100 {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await
            .expect("every event to be tried or limited within 30 s");
        }
        // Every write fails; each spent a token of the object's budget of 25, and a failure gives
        // none back, so the second round (well within the 5 minutes a token takes) writes nothing.
        assert_eq!(count(&metrics, "failed"), 25);
        assert_eq!(count(&metrics, "limited"), 175);
        assert_eq!(count(&metrics, "dropped"), 0);
    }

    #[test]
    fn recording_outside_a_runtime_drops_and_counts_the_event() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = {
            let _inside = runtime.enter();
            unreachable_client()
        };
        let metrics = Metrics::new(&Registry::new()).unwrap();
        let recorder = Recorder::new(client, "demo").metrics(&metrics);
        recorder
            .about(reference())
            .normal("Synced", "no runtime here");
        assert_eq!(count(&metrics, "dropped"), 1);
    }

    #[tokio::test]
    async fn the_instance_can_be_set_and_is_cut_to_what_kubernetes_accepts() {
        let recorder = Recorder::new(unreachable_client(), "demo").with_instance("operator-0");
        assert_eq!(recorder.instance(), "operator-0");
        assert_eq!(recorder.controller(), "demo");
        let long = Recorder::new(unreachable_client(), "demo").with_instance(&"p".repeat(300));
        assert_eq!(long.instance().len(), instance::MAX_INSTANCE);
    }
}
