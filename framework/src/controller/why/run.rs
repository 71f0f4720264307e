//! Follows the reconcile running on the current task: its triggers, and the writes it makes.

use std::future::Future;
use std::sync::Arc;

use parking_lot::Mutex;

use super::encoding::truncate;
use super::record::{Verb, WriteRecord};
use super::recorder::MAX_DIFF;
use super::trigger::Trigger;

tokio::task_local! {
    /// The reconcile running on this task.
    static RUN: Arc<Run>;
}

/// One reconcile as it runs.
#[derive(Debug, Default)]
pub(crate) struct Run {
    pub(crate) triggers: Vec<Trigger>,
    pub(crate) dropped: u32,
    /// Whether its writes are noted (the controller has a flight recorder).
    pub(crate) recording: bool,
    writes: Mutex<Vec<WriteRecord>>,
    /// The diff of the write about to be sent (set by `ctx.apply`).
    next_diff: Mutex<Option<String>>,
}

impl Run {
    /// A reconcile run for `triggers` (and `dropped` more).
    pub(crate) fn new(triggers: Vec<Trigger>, dropped: u32, recording: bool) -> Self {
        Self {
            triggers,
            dropped,
            recording,
            ..Self::default()
        }
    }

    /// The writes it made.
    pub(crate) fn take_writes(&self) -> Vec<WriteRecord> {
        std::mem::take(&mut *self.writes.lock())
    }
}

/// Runs `reconcile` as `run` (writes from tasks it spawns are not noted).
pub(crate) async fn running<F: Future>(run: Arc<Run>, reconcile: F) -> F::Output {
    RUN.scope(run, reconcile).await
}

/// The triggers of the reconcile running on this task (none outside one).
pub(crate) fn triggers() -> Vec<Trigger> {
    RUN.try_with(|run| run.triggers.clone()).unwrap_or_default()
}

/// How many triggers of the reconcile running on this task were beyond the bound.
#[cfg(test)]
pub(crate) fn dropped() -> u32 {
    RUN.try_with(|run| run.dropped).unwrap_or_default()
}

/// Whether a reconcile that records its writes runs on this task.
pub(crate) fn recording() -> bool {
    RUN.try_with(|run| run.recording).unwrap_or(false)
}

/// Notes `diff` (JSON) as the changed fields of the next write of this task's reconcile.
pub(crate) fn note_diff(diff: &str) {
    let _ = RUN.try_with(|run| {
        if run.recording {
            let cut = truncate(diff, MAX_DIFF);
            let diff = if cut.len() < diff.len() {
                format!("{cut}…")
            } else {
                cut.to_owned()
            };
            *run.next_diff.lock() = Some(diff);
        }
    });
}

/// Notes a write of this task's reconcile: `verb` of the `kind` object `namespace`/`name`
/// (its `status` if so), answered with `code`.
pub(crate) fn note_write(
    verb: Verb,
    kind: String,
    namespace: Option<String>,
    name: String,
    status: bool,
    code: u16,
) {
    let _ = RUN.try_with(|run| {
        if !run.recording {
            return;
        }
        let diff = run.next_diff.lock().take();
        run.writes.lock().push(WriteRecord {
            verb,
            kind,
            namespace,
            name,
            status,
            code,
            diff,
        });
    });
}
