//! Watches one connection's requests in flight and tells when it has waited too long for one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use hyper::service::Service;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{Closed, Limits};

/// The requests in flight on one connection, and since when it has had none; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Activity {
    state: Arc<watch::Sender<State>>,
}

#[derive(Clone, Copy, Debug)]
struct State {
    in_flight: usize,
    idle_since: Instant,
    answered: bool,
}

/// A request in flight; dropping it (answered or cancelled) ends it.
#[derive(Debug)]
pub(crate) struct InFlight(Activity);

impl Activity {
    /// A connection that has just finished its handshake.
    pub(crate) fn new() -> Self {
        Self {
            state: Arc::new(watch::Sender::new(State {
                in_flight: 0,
                idle_since: Instant::now(),
                answered: false,
            })),
        }
    }

    /// Starts a request.
    pub(crate) fn begin(&self) -> InFlight {
        self.state.send_modify(|s| s.in_flight += 1);
        InFlight(self.clone())
    }

    /// Resolves when the connection has had no request in flight for longer than `limits`
    /// allow: `read_header_timeout` before its first answer, `idle_timeout` after.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads the state.
    pub(crate) async fn expired(&self, limits: &Limits) -> Closed {
        let mut state = self.state.subscribe();
        loop {
            let now = *state.borrow_and_update();
            if now.in_flight > 0 {
                // The sender lives as long as `self`, so `changed` cannot fail here.
                let _ = state.changed().await;
                continue;
            }
            let (timeout, reason) = if now.answered {
                (limits.idle_timeout, Closed::IdleTimeout)
            } else {
                (limits.read_header_timeout, Closed::ReadHeaderTimeout)
            };
            tokio::select! {
                () = tokio::time::sleep_until(now.idle_since + timeout) => return reason,
                _ = state.changed() => {}
            }
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.state.send_modify(|s| {
            s.in_flight -= 1;
            s.answered = true;
            if s.in_flight == 0 {
                s.idle_since = Instant::now();
            }
        });
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
