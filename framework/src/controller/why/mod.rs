//! Says why a reconcile runs and remembers what it did: triggers and the flight recorder.
//!
//! Every change that queues a key carries a [`Trigger`]; the queue merges the key's adds, so one
//! reconcile may stand for several, and it gets every one of them
//! ([`Context::triggers`](crate::controller::Context::triggers), bounded by [`MAX_TRIGGERS`]).
//! After each reconcile the controller's flight recorder keeps a record of it for its object:
//! the triggers, when it started, how long it queued and ran, how it ended and what it wrote
//! (the last [`DEFAULT_RECORDED_RECONCILES`] per object unless configured otherwise), served as
//! JSON at `/debug/reconciles/NAMESPACE/NAME` and printed by the operator's `why` subcommand.

mod encoding;
mod pending;
pub(crate) mod record;
mod recorder;
mod run;
mod trigger;
mod written;

pub use pending::MAX_TRIGGERS;
pub(crate) use pending::{Pending, Taken};
pub use recorder::DEFAULT_RECORDED_RECONCILES;
pub(crate) use recorder::{History, Reconciles, Recorder, now_ms};
#[cfg(test)]
pub(crate) use run::dropped;
pub(crate) use run::{Run, note_diff, running, triggers};
pub use trigger::{EventType, Reason, Trigger};
pub(crate) use written::WriteRequest;
