//! Records Kubernetes Events about objects, in the background, aggregated and rate limited.
//!
//! [`Recorder`] writes `events.k8s.io/v1` Events (what `kubectl events` and `kubectl describe`
//! show) for one controller. Recording never fails and never waits: a reconcile hands the event
//! over and goes on, and a failure loop cannot flood the API server, whatever its messages say.
//! As client-go's `EventCorrelator` does:
//!
//! - an identical event (same object, type, reason, note and action) within 10 minutes of the
//!   last one is counted in the `series` of the Event already written, not written again;
//! - an event that differs, even only by its note, is a new Event, so the newest message shows;
//! - each object gets at most 25 new Events at once, then one more every 5 minutes; the rest
//!   are dropped (and counted);
//! - the memory of recent events and objects is bounded (4096 of each, least recently used
//!   forgotten first).
//!
//! Event names are the object's name and a unique suffix, shortened and hashed when the object's
//! name is too long or not a DNS subdomain, so every Event name is valid.
#![doc(alias = "EventRecorder")]
#![doc(alias = "EventCorrelator")]

mod correlator;
mod event_type;
mod instance;
mod lru;
mod name;
mod recorder;
mod writer;

pub use recorder::{Recorder, Subject};
