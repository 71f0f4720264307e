//! Watches one connection's requests in flight and tells when it has waited too long for one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use hyper::service::Service;
use tokio::time::Instant;

use super::{Closed, Limits};

/// The shortest wait of [`Activity::expired`] on a busy connection, so that zero timeouts do not spin.
const MIN_RECHECK: Duration = Duration::from_millis(1);

/// The requests in flight on one connection, and since when it has had none; cheap to clone.
///
/// Starting and ending a request touches two atomics and wakes nothing: [`Activity::expired`]
/// sleeps until the earliest moment the connection could expire and looks again then, so a
/// request costs no timer and no extra poll of the connection.
#[derive(Clone, Debug)]
pub(crate) struct Activity {
    state: Arc<State>,
}

#[derive(Debug)]
struct State {
    /// When the handshake finished: the origin of `last_answer`.
    start: Instant,
    in_flight: AtomicUsize,
    /// Nanoseconds from `start` to the end of the last request, plus one; 0 before any.
    last_answer: AtomicU64,
}

/// A request in flight; dropping it (answered or cancelled) ends it.
#[derive(Debug)]
pub(crate) struct InFlight(Activity);

impl Activity {
    /// A connection that has just finished its handshake.
    pub(crate) fn new() -> Self {
        Self {
            state: Arc::new(State {
                start: Instant::now(),
                in_flight: AtomicUsize::new(0),
                last_answer: AtomicU64::new(0),
            }),
        }
    }

    /// Starts a request.
    pub(crate) fn begin(&self) -> InFlight {
        self.state.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(self.clone())
    }

    /// Resolves when the connection has had no request in flight for longer than `limits`
    /// allow: `read_header_timeout` before its first answer, `idle_timeout` after.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads the state.
    pub(crate) async fn expired(&self, limits: &Limits) -> Closed {
        let shortest = limits
            .read_header_timeout
            .min(limits.idle_timeout)
            .max(MIN_RECHECK);
        loop {
            let now = Instant::now();
            let wake = if self.state.in_flight.load(Ordering::SeqCst) > 0 {
                // It cannot expire sooner than a timeout after its current requests end.
                now + shortest
            } else {
                let (idle_since, timeout, reason) = match self.state.last_answer() {
                    Some(end) => (end, limits.idle_timeout, Closed::IdleTimeout),
                    None => (
                        self.state.start,
                        limits.read_header_timeout,
                        Closed::ReadHeaderTimeout,
                    ),
                };
                let deadline = idle_since + timeout;
                if deadline <= now {
                    return reason;
                }
                deadline
            };
            tokio::time::sleep_until(wake).await;
        }
    }
}

impl State {
    /// When the last request ended, if one has.
    fn last_answer(&self) -> Option<Instant> {
        match self.last_answer.load(Ordering::SeqCst) {
            0 => None,
            nanos => Some(self.start + Duration::from_nanos(nanos - 1)),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let state = &self.0.state;
        let since_start = u64::try_from(state.start.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        state
            .last_answer
            .fetch_max(since_start.saturating_add(1), Ordering::SeqCst);
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A service that marks each of its calls in flight on a connection's [`Activity`].
#[derive(Clone, Debug)]
pub(crate) struct Tracked<S> {
    inner: S,
    activity: Activity,
}

impl<S> Tracked<S> {
    /// `inner`, reporting to `activity`.
    pub(crate) fn new(inner: S, activity: Activity) -> Self {
        Self { inner, activity }
    }
}

impl<S, R> Service<R> for Tracked<S>
where
    S: Service<R>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn call(&self, request: R) -> Self::Future {
        let in_flight = self.activity.begin();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let answer = answer.await;
            drop(in_flight);
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn limits() -> Limits {
        Limits {
            read_header_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(20),
            ..Limits::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_never_sends_a_request_expires_after_the_header_timeout() {
        let activity = Activity::new();
        let start = Instant::now();
        assert_eq!(activity.expired(&limits()).await, Closed::ReadHeaderTimeout);
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_in_flight_holds_the_connection_and_the_idle_timeout_starts_at_its_end() {
        let activity = Activity::new();
        let start = Instant::now();
        let request = activity.begin();
        let expiry = tokio::spawn({
            let activity = activity.clone();
            async move { activity.expired(&limits()).await }
        });
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!expiry.is_finished(), "expired with a request in flight");
        drop(request);
        assert_eq!(expiry.await.unwrap(), Closed::IdleTimeout);
        assert_eq!(start.elapsed(), Duration::from_secs(80));
    }
}
