//! Tells once when the API server becomes unreachable, sums up while it stays so, and tells once
//! when it is back, for every informer, elector and controller that shares it.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Whether the API server answers, as the informers and the leader elector that share this see
/// it.
///
/// While it is unreachable, each informer (and the elector) retries with its own backoff; this
/// turns their failures into one WARN when the outage begins, summaries ever further apart while
/// it lasts (a summary is written only when the last line is older than the retry delay that
/// comes next and than the outage was at the last line, up to 30 s), and one INFO when a request
/// succeeds again, with how long the server was gone. Reconciles that failed for the outage wait for its end ([`Self::until_reachable`]);
/// the summaries and the last line say how many.
#[derive(Debug, Default)]
pub(crate) struct Connectivity {
    state: Mutex<State>,
    /// Wakes the reconciles that wait for the server when it is back. A `Notify`, not a
    /// `watch`: it wakes its waiters in the order they came, where tokio's `watch` picks an
    /// order at random, which a simulation's seed could not replay.
    back: Arc<Notify>,
    /// Wakes the informers that retry as soon as an outage that more than one resource saw ends.
    shared_outage_ended: Arc<Notify>,
    /// How many reconciles wait for the server.
    waiting: Arc<AtomicUsize>,
}

/// The longest a summary waits for the outage's age alone (an informer's default longest backoff).
const MAX_SUMMARY_GAP: Duration = Duration::from_secs(30);

#[derive(Debug)]
enum State {
    Reachable {
        /// The last watch that ended without news, and when: if an outage begins within
        /// [`QUIET_END_JOINS`] of it, that watch's resource saw the outage too.
        quiet_end: Option<(String, Instant)>,
    },
    Unreachable {
        since: Instant,
        last_line: Instant,
        failures: u64,
        /// The resource whose failure began the outage.
        first: String,
        /// Whether another resource (or the elector) failed in it too, or a watch of
        /// another resource ended in it without news.
        shared: bool,
    },
}

impl Default for State {
    fn default() -> Self {
        Self::Reachable { quiet_end: None }
    }
}

/// How close to an outage's beginning a watch that ended without news counts as one of its
/// failures: the outage cuts every watch at once, in an order of the runtime's choosing.
const QUIET_END_JOINS: Duration = Duration::from_secs(1);

impl Connectivity {
    /// Records a request of `resource` that could not reach the server; `retry_in` is the delay
    /// before that informer tries again.
    pub(crate) fn failed(&self, resource: &str, error: &dyn fmt::Display, retry_in: Duration) {
        let now = Instant::now();
        let mut state = self.state.lock();
        match &mut *state {
            State::Reachable { quiet_end } => {
                let shared = quiet_end.as_ref().is_some_and(|(other, at)| {
                    other != resource && now.duration_since(*at) <= QUIET_END_JOINS
                });
                *state = State::Unreachable {
                    since: now,
                    last_line: now,
                    failures: 1,
                    first: resource.to_owned(),
                    shared,
                };
                drop(state);
                tracing::warn!(
                    resource,
                    error = %error,
                    retry_in = ?retry_in,
                    "API server unreachable; retrying with backoff"
                );
            }
            State::Unreachable {
                since,
                last_line,
                failures,
                first,
                shared,
            } => {
                *failures += 1;
                *shared |= first != resource;
                // At least the next retry's delay apart, and as far apart as the outage was old
                // at the last line (up to a cap): a caller that retries at a fixed pace, like
                // the leader elector, does not add a line per retry.
                let age = last_line.duration_since(*since).min(MAX_SUMMARY_GAP);
                if now.duration_since(*last_line) < retry_in.max(age) {
                    return;
                }
                *last_line = now;
                let (down_for, failures) = (now.duration_since(*since), *failures);
                drop(state);
                tracing::warn!(
                    down_for_seconds = down_for.as_secs(),
                    failed_requests = failures,
                    waiting_reconciles = self.waiting.load(Ordering::Relaxed),
                    error = %error,
                    retry_in = ?retry_in,
                    "API server still unreachable"
                );
            }
        }
    }

    /// Records that a watch of `resource` ended without news: no failure of its own, but, within
    /// an outage another resource began, a sign that it saw the outage too.
    pub(crate) fn ended_quietly(&self, resource: &str) {
        let now = Instant::now();
        match &mut *self.state.lock() {
            State::Reachable { quiet_end } => *quiet_end = Some((resource.to_owned(), now)),
            State::Unreachable { first, shared, .. } => *shared |= first != resource,
        }
    }

    /// Records a request that reached the server.
    pub(crate) fn reachable(&self) {
        let mut state = self.state.lock();
        if let State::Unreachable {
            since,
            failures,
            shared,
            ..
        } = std::mem::take(&mut *state)
        {
            // Counted before the waiting reconciles are released: they go on at once, on other
            // threads, and each stops counting as it does.
            let waiting = self.waiting.load(Ordering::Relaxed);
            self.back.notify_waiters();
            if shared {
                self.shared_outage_ended.notify_waiters();
            }
            drop(state);
            let down_for = since.elapsed();
            tracing::info!(
                down_for_seconds = down_for.as_secs_f64(),
                failed_requests = failures,
                waiting_reconciles = waiting,
                "API server reachable again after {:.1} s",
                down_for.as_secs_f64()
            );
        }
    }
}

impl Connectivity {
    /// Whether a request failed to reach the server since the last one that reached it.
    pub(crate) fn is_unreachable(&self) -> bool {
        matches!(*self.state.lock(), State::Unreachable { .. })
    }

    /// Completes when the next outage that more than one resource saw ends (a request reached
    /// the server after requests of two resources, or of one and the elector, could not): an
    /// informer waiting out its backoff after such an outage retries then, not when its own
    /// backoff ends, so that every informer is current again as soon as the server is back,
    /// the one whose failure began the outage included. An outage that one resource alone saw
    /// (one resource answering 503 while the rest get through) wakes nobody: that resource keeps
    /// its backoff.
    pub(crate) fn shared_outage_ended(&self) -> impl Future<Output = ()> + Send + 'static {
        // Waiting from now, not from when first polled: an outage that ends before then counts.
        Arc::clone(&self.shared_outage_ended).notified_owned()
    }

    /// Completes when the next outage ends, whichever resources saw it: a watch that ended
    /// without news (no failure of its own to count) waits for this or its backoff, so that
    /// an outage's end finds it watching again.
    pub(crate) fn outage_ended(&self) -> impl Future<Output = ()> + Send + 'static {
        Arc::clone(&self.back).notified_owned()
    }

    /// Completes once the server is reachable again (at once if it is), counting the caller
    /// among the reconciles that wait for it until then.
    pub(crate) fn until_reachable(&self) -> impl Future<Output = ()> + Send + 'static {
        // Waiting from before the check: the server cannot come back unnoticed in between.
        let back = Arc::clone(&self.back).notified_owned();
        let unreachable = self.is_unreachable();
        let waiting = Waiting::new(Arc::clone(&self.waiting));
        async move {
            if unreachable {
                back.await;
            }
            drop(waiting);
        }
    }
}

/// One reconcile counted as waiting for the server, until dropped.
struct Waiting(Arc<AtomicUsize>);

impl Waiting {
    fn new(count: Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether `err` means the server could not be reached or did not answer (rather than an answer
/// the server gave, such as 403 or 404).
pub(crate) fn is_unreachable(err: &kube::Error) -> bool {
    match err {
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => true,
        // A server that is starting or shutting down answers 503 or 504 for a while.
        kube::Error::Api(status) => matches!(status.code, 502..=504),
        _ => false,
    }
}

/// Whether `err` or one of its causes is a [`kube::Error`] for which [`is_unreachable`] holds.
pub(crate) fn is_unreachable_in(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(link) = next {
        let kube_error = link
            .downcast_ref::<kube::Error>()
            .or_else(|| link.downcast_ref::<Box<kube::Error>>().map(AsRef::as_ref));
        if kube_error.is_some_and(is_unreachable) {
            return true;
        }
        // Through a `kubeward::Error` too, which keeps its causes in its text.
        next = crate::error::next_cause(link);
    }
    false
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    /// Counts the events written at each level.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<(tracing::Level, String)>>>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Lines {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            let mut message = String::new();
            event.record(
                &mut |field: &tracing::field::Field, value: &dyn fmt::Debug| {
                    if field.name() == "message" {
                        message = format!("{value:?}");
                    }
                },
            );
            self.0.lock().push((*event.metadata().level(), message));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_outage_of_many_failed_requests_writes_a_warning_a_few_summaries_and_one_info() {
        let lines = Lines::default();
        let _guard =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(lines.clone()));
        let tracker = Connectivity::default();
        let error = "connection refused";
        // Ten informers fail every 100 ms for the first second (a hundred failures) and then
        // back off: 1 s, 2 s, 4 s, 8 s (steps 1-4), then 8 s again twice.
        for _ in 0..10 {
            for informer in 0..10 {
                tracker.failed(&format!("r{informer}"), &error, Duration::from_millis(100));
            }
            tokio::time::advance(Duration::from_millis(100)).await;
        }
        for delay in [1, 2, 4, 8, 8, 8] {
            let delay = Duration::from_secs(delay);
            for informer in 0..10 {
                tracker.failed(&format!("r{informer}"), &error, delay);
            }
            tokio::time::advance(delay).await;
        }
        tracker.reachable();
        tracker.reachable();

        let lines = lines.0.lock().clone();
        let warnings = lines
            .iter()
            .filter(|(l, _)| *l == tracing::Level::WARN)
            .count();
        let infos: Vec<_> = lines
            .iter()
            .filter(|(l, _)| *l == tracing::Level::INFO)
            .collect();
        // One at the start, then a summary when the last line is older than both the next
        // retry's delay and the outage's age at that line: at 0.1, 0.2, 0.4 and 0.8 s, then
        // none until 16 s (each backoff step's failures come less than its delay after the
        // last line). At most one per backoff step.
        assert!(
            warnings <= 1 + 10 + 6,
            "{warnings} warnings for 160 failures: {lines:?}"
        );
        assert!(
            warnings >= 4,
            "a warning and summaries while it lasts: {lines:?}"
        );
        assert_eq!(infos.len(), 1, "one line when it is back: {lines:?}");
        assert!(
            infos[0].1.contains("reachable again after 32.0 s"),
            "{infos:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_retrying_every_two_seconds_adds_lines_only_as_the_outage_grows_older() {
        let lines = Lines::default();
        let _guard =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(lines.clone()));
        let tracker = Connectivity::default();
        // The leader elector's pace: a failed Lease read every 2 s, for 36 s.
        for _ in 0..18 {
            tracker.failed("lease", &"connection refused", Duration::from_secs(2));
            tokio::time::advance(Duration::from_secs(2)).await;
        }
        let lines = lines.0.lock().clone();
        // At 0, 2, 4, 8, 16 and 32 s: the gap grows with the outage's age.
        assert_eq!(lines.len(), 6, "18 failures in 36 s: {lines:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_reconcile_waits_for_the_server_counted_and_goes_on_when_it_is_back() {
        let tracker = Connectivity::default();
        assert!(!tracker.is_unreachable());
        tokio::time::timeout(Duration::from_secs(1), tracker.until_reachable())
            .await
            .expect("no wait while the server is reachable");
        tracker.failed("r", &"connection refused", Duration::from_secs(1));
        assert!(tracker.is_unreachable());
        let waiting = tokio::spawn(tracker.until_reachable());
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!waiting.is_finished(), "it waits while the server is down");
        assert_eq!(tracker.waiting.load(Ordering::Relaxed), 1);
        tracker.reachable();
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("it goes on once the server is back")
            .expect("the wait does not panic");
        assert_eq!(tracker.waiting.load(Ordering::Relaxed), 0);
        assert!(!tracker.is_unreachable());
    }

    /// The `waiting_reconciles` of the INFO lines written.
    #[derive(Clone, Default)]
    struct WaitingCounts(Arc<Mutex<Vec<u64>>>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for WaitingCounts {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            struct Field(Option<u64>);
            impl tracing::field::Visit for Field {
                fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
                    if field.name() == "waiting_reconciles" {
                        self.0 = Some(value);
                    }
                }
                fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn fmt::Debug) {}
            }
            let mut field = Field(None);
            event.record(&mut field);
            if *event.metadata().level() == tracing::Level::INFO {
                self.0.lock().extend(field.0);
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_line_saying_the_server_is_back_counts_every_reconcile_that_waited() {
        const WAITERS: usize = 2000;
        let counts = WaitingCounts::default();
        let _guard =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(counts.clone()));
        let tracker = Connectivity::default();
        tracker.failed("r", &"connection refused", Duration::from_secs(1));
        let waiters: Vec<_> = (0..WAITERS)
            .map(|_| tokio::spawn(tracker.until_reachable()))
            .collect();
        assert_eq!(tracker.waiting.load(Ordering::Relaxed), WAITERS);
        // The waiters wake on the runtime's other thread while this one writes the line: the
        // count must be taken before they are released.
        tracker.reachable();
        for waiter in waiters {
            waiter.await.expect("the wait does not panic");
        }
        assert_eq!(*counts.0.lock(), [WAITERS as u64]);
    }

    #[test]
    fn a_connection_failure_is_found_among_the_causes_of_a_reconcile_error() {
        #[derive(Debug, thiserror::Error)]
        #[error("reconcile failed")]
        struct Wrapper(#[source] kube::Error);
        let refused =
            kube::Error::ReadEvents(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(is_unreachable_in(&Wrapper(refused)));
        let forbidden = kube::Error::Api(Box::new(kube::core::Status::failure("no", "Forbidden")));
        assert!(!is_unreachable_in(&Wrapper(forbidden)));
    }

    #[test]
    fn only_errors_of_reaching_the_server_count_as_unreachable() {
        let refused =
            kube::Error::ReadEvents(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(is_unreachable(&refused));
        let forbidden = kube::Error::Api(Box::new(kube::core::Status::failure(
            "forbidden",
            "Forbidden",
        )));
        assert!(!is_unreachable(&forbidden));
    }
}
