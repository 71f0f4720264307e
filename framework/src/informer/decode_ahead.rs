//! Decodes a backlog of watch lines on the blocking pool while the reflector applies earlier ones.
//!
//! A watch that has fallen behind (a burst of changes, a slow consumer, a resumed connection)
//! has many events ready at once. Decoding is most of what an event costs, so the reflector
//! hands such a backlog, in batches, to tokio's blocking pool and applies the decoded batches in
//! the order the lines arrived, while the next batches decode on other cores. A line that comes
//! alone is decoded on the reflector's task: no thread hop when the watch keeps up.
//!
//! On a current-thread runtime (tests, and simulations on a paused clock that a thread outside
//! the runtime would make nondeterministic) every line is decoded on the reflector's task.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use kube::Resource;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use super::decode::{Decoder, Event};

/// Gathered lines that make a backlog, decoded on the blocking pool rather than here: this
/// many, or at least two of this many bytes in all (a few large objects are worth it too).
const BACKLOG_LINES: usize = 64;
const BACKLOG_BYTES: usize = 64 << 10;

/// The most lines, and bytes of lines, in one batch: what a backlog holds in memory before it is
/// decoded is at most [`IN_FLIGHT`] times this.
pub(super) const MAX_BATCH_LINES: usize = 512;
pub(super) const MAX_BATCH_BYTES: usize = 1 << 20;

/// The most batches decoding at once.
const IN_FLIGHT: usize = 4;

/// One line's decoding: the event, or why the line is not one.
pub(super) type Decoding<K> = Result<Event<K>, serde_json::Error>;

/// A batch's lines, each with its decoding.
pub(super) type Decoded<K> = Vec<(Bytes, Decoding<K>)>;

/// The batches being decoded, oldest first.
pub(super) struct DecodeAhead<K> {
    decoder: Arc<Decoder<K>>,
    batches: VecDeque<JoinHandle<Decoded<K>>>,
    /// Whether the runtime has other threads to decode on.
    parallel: bool,
}

impl<K> DecodeAhead<K>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
{
    pub(super) fn new(decoder: Arc<Decoder<K>>) -> Self {
        let parallel = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        Self {
            decoder,
            batches: VecDeque::new(),
            parallel,
        }
    }

    /// Whether no batch is being decoded: the next line may be decoded where it is read.
    pub(super) fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// Whether a batch of `lines` lines, `bytes` bytes in all, goes to the blocking pool: a
    /// backlog does, and so does any line read while earlier batches decode (it must be
    /// applied after them).
    pub(super) fn takes(&self, lines: usize, bytes: usize) -> bool {
        self.parallel
            && (lines >= BACKLOG_LINES
                || (lines >= 2 && bytes >= BACKLOG_BYTES)
                || (lines > 0 && !self.batches.is_empty()))
    }

    /// Whether a batch must be applied before another can start decoding.
    pub(super) fn is_full(&self) -> bool {
        self.batches.len() >= IN_FLIGHT
    }

    /// Starts decoding `lines` on the blocking pool, in the caller's tracing span; `exact` as
    /// for [`Decoder::event`].
    pub(super) fn push(&mut self, lines: Vec<Bytes>, exact: bool) {
        let decoder = Arc::clone(&self.decoder);
        let span = tracing::Span::current();
        self.batches.push_back(tokio::task::spawn_blocking(move || {
            span.in_scope(|| {
                lines
                    .into_iter()
                    .map(|line| {
                        let event = decoder.event(&line, exact);
                        (line, event)
                    })
                    .collect()
            })
        }));
    }

    /// The oldest batch, once decoded; `None` if there is none. A batch the runtime dropped
    /// (it is shutting down) is `Err(Dropped)`: its events never reached the cache, so the
    /// watch must resume from the last one that did. A panic while decoding (in a user's
    /// transform) goes on in the caller, as it would have had the batch been decoded there.
    pub(super) async fn oldest(&mut self) -> Option<Result<Decoded<K>, Dropped>> {
        Some(match self.batches.pop_front()?.await {
            Ok(decoded) => Ok(decoded),
            Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
            Err(_) => Err(Dropped),
        })
    }
}

/// A batch the runtime dropped before it was decoded.
#[derive(Debug)]
pub(super) struct Dropped;

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::informer::Config;
    use crate::informer::transforms::Transforms;

    fn decoder() -> Arc<Decoder<ConfigMap>> {
        Arc::new(Decoder::new(
            "/cms",
            &Config::default(),
            Arc::new(Transforms::new(true)),
            Arc::default(),
        ))
    }

    #[tokio::test]
    async fn on_a_current_thread_runtime_every_line_is_decoded_where_it_is_read() {
        let ahead = DecodeAhead::new(decoder());
        assert!(!ahead.takes(BACKLOG_LINES, MAX_BATCH_BYTES));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_backlog_is_many_lines_or_a_few_large_ones_and_lines_after_a_batch_follow_it() {
        let mut ahead = DecodeAhead::new(decoder());
        assert!(!ahead.takes(BACKLOG_LINES - 1, 100), "a few small lines");
        assert!(ahead.takes(BACKLOG_LINES, 100));
        assert!(ahead.takes(2, BACKLOG_BYTES), "two large objects");
        assert!(!ahead.takes(1, MAX_BATCH_BYTES), "one line, however large");
        ahead.push(Vec::new(), false);
        assert!(
            ahead.takes(1, 10),
            "a line read while a batch decodes goes after it"
        );
        assert!(!ahead.takes(0, 0));
    }
}
