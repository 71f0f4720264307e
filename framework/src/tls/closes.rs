//! Counts the connections an HTTPS server closed or refused to protect itself, by reason.

use prometheus::IntCounterVec;

use super::Closed;

/// The `kubeward_serving_connections_closed_total` series of one server; cheap to clone, and
/// counting nothing when made with [`Default`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Closes {
    counter: Option<IntCounterVec>,
    server: &'static str,
}

impl Closes {
    /// The series of `server` (`webhook`, `metrics`) in `counter`, every reason at zero.
    pub(crate) fn new(counter: IntCounterVec, server: &'static str) -> Self {
        for reason in Closed::ALL {
            counter.with_label_values(&[server, reason.as_str()]);
        }
        Self {
            counter: Some(counter),
            server,
        }
    }

    /// Counts one connection closed for `reason`.
    pub(crate) fn record(&self, reason: Closed) {
        tracing::debug!(
            server = self.server,
            reason = reason.as_str(),
            "closing a connection"
        );
        if let Some(counter) = &self.counter {
            counter
                .with_label_values(&[self.server, reason.as_str()])
                .inc();
        }
    }
}
