//! Tells once when the API server becomes unreachable, sums up while it stays so, and tells once
//! when it is back, for every informer that shares it.

use std::fmt;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// Whether the API server answers, as the informers that share this see it.
///
/// While it is unreachable, each informer retries with its own backoff; this turns their
/// failures into one WARN when the outage begins, at most one summary per backoff step while it
/// lasts (a summary is written only when the last line is older than the retry delay that comes
/// next), and one INFO when a request succeeds again, with how long the server was gone.
#[derive(Debug, Default)]
pub(crate) struct Connectivity {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
enum State {
    #[default]
    Reachable,
    Unreachable {
        since: Instant,
        last_line: Instant,
        failures: u64,
    },
}

impl Connectivity {
    /// Records a request of `resource` that could not reach the server; `retry_in` is the delay
    /// before that informer tries again.
    pub(crate) fn failed(&self, resource: &str, error: &dyn fmt::Display, retry_in: Duration) {
        let now = Instant::now();
        let mut state = self.state.lock();
        match &mut *state {
            State::Reachable => {
                *state = State::Unreachable {
                    since: now,
                    last_line: now,
                    failures: 1,
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
            } => {
                *failures += 1;
                if now.duration_since(*last_line) < retry_in {
                    return;
                }
                *last_line = now;
                let (down_for, failures) = (now.duration_since(*since), *failures);
                drop(state);
                tracing::warn!(
                    down_for_seconds = down_for.as_secs(),
                    failed_requests = failures,
                    error = %error,
                    retry_in = ?retry_in,
                    "API server still unreachable"
                );
            }
        }
    }

    /// Records a request that reached the server.
    pub(crate) fn reachable(&self) {
        let mut state = self.state.lock();
        if let State::Unreachable {
            since, failures, ..
        } = std::mem::take(&mut *state)
        {
            drop(state);
            let down_for = since.elapsed();
            tracing::info!(
                down_for_seconds = down_for.as_secs_f64(),
                failed_requests = failures,
                "API server reachable again after {:.1} s",
                down_for.as_secs_f64()
            );
        }
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

/// `err` with its causes, `outer: inner: innermost`, on one line.
pub(crate) fn with_causes(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text.replace('\n', " ")
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
    async fn an_outage_of_many_failed_requests_writes_a_warning_a_summary_per_backoff_step_and_one_info()
     {
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
        // One at the start, one per 100 ms step (the first second), then one per backoff step.
        assert!(
            warnings <= 1 + 10 + 6,
            "{warnings} warnings for 160 failures: {lines:?}"
        );
        assert!(
            warnings > 6,
            "a warning and a summary per backoff step: {lines:?}"
        );
        assert_eq!(infos.len(), 1, "one line when it is back: {lines:?}");
        assert!(
            infos[0].1.contains("reachable again after 32.0 s"),
            "{infos:?}"
        );
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
