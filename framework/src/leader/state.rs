//! Decides from the observed Lease and the local monotonic clock whether to acquire, renew or wait.
//!
//! Nothing here does I/O: the [`LeaderElector`](super::LeaderElector) reads the Lease, asks
//! [`State::observe`] what to write, writes it and reports back with [`State::written`].
//!
//! Expiry is judged only by local monotonic time: a Lease held by someone else expires
//! `leaseDurationSeconds` after *we* first saw its current record, never by comparing its
//! `renewTime` with our clock. A leader's belief ends `renew deadline` after the start of its
//! last successful write. Since every observer first sees that write after it started, and waits
//! a whole lease duration (longer than the renew deadline) before taking over, the two beliefs
//! never overlap, as long as the clocks run at about the same rate.
//!
//! One exception: a holder that never renews (the sharder's takeover of a dead shard's Lease,
//! see [`State::unrenewed_holder`]) holds for the term its record states, `renewTime` plus
//! `leaseDurationSeconds` by the wall clock, and never longer than the usual wait.

use std::time::Duration;

use tokio::time::Instant;

use super::Term;

/// The leader-election fields of a Lease's spec.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[doc(alias = "LeaderElectionRecord")]
pub(crate) struct Record {
    /// `holderIdentity`; `None` when nobody holds the Lease (an empty string reads as `None`).
    pub(crate) holder: Option<String>,
    /// `leaseDurationSeconds`.
    pub(crate) lease_duration: Option<Duration>,
    /// `acquireTime` in microseconds since the Unix epoch (wall clock, informative only).
    pub(crate) acquire_time: Option<i64>,
    /// `renewTime` in microseconds since the Unix epoch; only compared for change, never with a clock.
    pub(crate) renew_time: Option<i64>,
    /// `leaseTransitions`: how often the Lease changed hands.
    pub(crate) transitions: i32,
}

/// A Lease as read from the API server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Observed {
    /// Its leader-election fields.
    pub(crate) record: Record,
    /// Its `metadata.resourceVersion`, the precondition of the next write.
    pub(crate) resource_version: String,
}

/// What to do after observing the Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Write this to the Lease.
    Write(Write),
    /// Someone else holds the Lease; it expires at `expires_at` unless it changes before.
    Wait {
        /// The current holder.
        holder: String,
        /// When the Lease expires by our clock if we see no further change.
        expires_at: Instant,
    },
}

/// A write to the Lease, guarded by the resourceVersion it was decided on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Write {
    /// Why it is written.
    pub(crate) kind: WriteKind,
    /// The record to write.
    pub(crate) record: Record,
    /// The precondition; `None` for a create.
    pub(crate) resource_version: Option<String>,
}

/// Why a [`Write`] is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteKind {
    /// The Lease does not exist: create it holding it.
    Create,
    /// The Lease is empty or expired: take it over.
    Acquire,
    /// We hold the Lease: renew it.
    Renew,
    /// We are shutting down: clear the holder so a standby takes over at once.
    Release,
}

/// The pure leader-election state of one candidate.
#[derive(Clone, Debug)]
pub(crate) struct State {
    identity: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    /// The last distinct record seen, and when we first saw it (local monotonic time).
    seen: Option<(Record, Instant)>,
    term: Option<Term>,
    last_term: Option<Term>,
    /// A holder whose term ends as its record states (see [`Self::unrenewed_holder`]).
    unrenewed: Option<String>,
}

impl State {
    /// A candidate named `identity` that writes `lease_duration` (rounded up to whole seconds)
    /// and keeps leading `renew_deadline` after the start of its last successful write.
    #[must_use]
    pub(crate) fn new(
        identity: impl Into<String>,
        lease_duration: Duration,
        renew_deadline: Duration,
    ) -> Self {
        let whole_seconds = lease_duration.as_secs() + u64::from(lease_duration.subsec_nanos() > 0);
        Self {
            identity: identity.into(),
            lease_duration: Duration::from_secs(whole_seconds),
            renew_deadline,
            seen: None,
            term: None,
            last_term: None,
            unrenewed: None,
        }
    }

    /// With `holder` taken for one that writes a Lease once and never renews it: the
    /// sharder, which takes over a dead shard's Lease for a fixed term so that the shard cannot
    /// come back unnoticed. Such a record expires at its `renewTime` plus its
    /// `leaseDurationSeconds` by our wall clock (or a lease duration after we first saw it, if
    /// that is sooner): a shard restarted long after the takeover waits for what is left of
    /// the term, not for a whole new one. No one acts on holding such a Lease, so a clock that
    /// runs ahead of the sharder's only shortens a wait that protects no running holder.
    #[cfg(feature = "sharding")]
    #[must_use]
    pub(crate) fn unrenewed_holder(mut self, holder: impl Into<String>) -> Self {
        self.unrenewed = Some(holder.into());
        self
    }

    /// This candidate's identity.
    #[must_use]
    pub(crate) fn identity(&self) -> &str {
        &self.identity
    }

    /// The current term, if this candidate believes it leads (check with [`Term::is_current`]).
    #[must_use]
    pub(crate) fn term(&self) -> Option<Term> {
        self.term
    }

    /// The most recent term that has ended.
    #[must_use]
    pub(crate) fn last_term(&self) -> Option<Term> {
        self.last_term
    }

    /// The holder of the Lease as last observed.
    #[must_use]
    pub(crate) fn observed_holder(&self) -> Option<&str> {
        self.seen
            .as_ref()
            .and_then(|(record, _)| record.holder.as_deref())
    }

    /// Whether this candidate leads at `now`.
    #[must_use]
    pub(crate) fn is_leading(&self, now: Instant) -> bool {
        self.term.is_some_and(|term| term.is_current(now))
    }

    /// Ends the current term if its renew deadline has passed by `now`.
    pub(crate) fn tick(&mut self, now: Instant) {
        if let Some(term) = self.term
            && now >= term.valid_until
        {
            self.end_term(term.valid_until);
        }
    }

    /// Ends the current term at `now` (or at its deadline, if that came first).
    pub(crate) fn stop(&mut self, now: Instant) {
        self.tick(now);
        self.end_term(now);
    }

    /// Decides what to do about the Lease read at `now` (`None`: it does not exist).
    ///
    /// `now` must be taken after the read returned; `wall_micros` is the wall clock for
    /// `renewTime`, which is kept strictly increasing so every renewal is seen as a change.
    pub(crate) fn observe(
        &mut self,
        lease: Option<&Observed>,
        now: Instant,
        wall_micros: i64,
    ) -> Step {
        self.tick(now);
        let Some(lease) = lease else {
            // The Lease is gone (never made, or deleted): nobody can hold it, including us.
            self.stop(now);
            self.seen = None;
            return Step::Write(Write {
                kind: WriteKind::Create,
                record: self.record_held_since(wall_micros, 0),
                resource_version: None,
            });
        };
        let record = &lease.record;
        if self.seen.as_ref().is_none_or(|(seen, _)| seen != record) {
            self.seen = Some((record.clone(), now));
        }
        let resource_version = Some(lease.resource_version.clone());
        match record.holder.as_deref() {
            Some(holder) if holder == self.identity => {
                let mut renewed = record.clone();
                renewed.renew_time = Some(next_stamp(record.renew_time, wall_micros));
                renewed.lease_duration = Some(self.lease_duration);
                Step::Write(Write {
                    kind: WriteKind::Renew,
                    record: renewed,
                    resource_version,
                })
            }
            Some(holder) => {
                // Someone else holds it; if we believed we led, that belief is wrong now.
                self.stop(now);
                let seen_at = self.seen.as_ref().map_or(now, |(_, at)| *at);
                let duration = record.lease_duration.unwrap_or(self.lease_duration);
                let mut expires_at = seen_at + duration;
                if let (Some(unrenewed), Some(renewed)) = (&self.unrenewed, record.renew_time)
                    && unrenewed == holder
                {
                    let duration_micros = i64::try_from(duration.as_micros()).unwrap_or(i64::MAX);
                    let left = renewed
                        .saturating_add(duration_micros)
                        .saturating_sub(wall_micros);
                    let left = Duration::from_micros(u64::try_from(left).unwrap_or(0));
                    expires_at = expires_at.min(now + left);
                }
                if now < expires_at {
                    return Step::Wait {
                        holder: holder.to_owned(),
                        expires_at,
                    };
                }
                let stamp = next_stamp(record.renew_time, wall_micros);
                Step::Write(Write {
                    kind: WriteKind::Acquire,
                    record: self.record_held_since(stamp, record.transitions.saturating_add(1)),
                    resource_version,
                })
            }
            None => {
                self.stop(now);
                let stamp = next_stamp(record.renew_time, wall_micros);
                Step::Write(Write {
                    kind: WriteKind::Acquire,
                    record: self.record_held_since(stamp, record.transitions.saturating_add(1)),
                    resource_version,
                })
            }
        }
    }

    /// Records that `write`, begun at `started_at`, succeeded; the response came at `now`.
    ///
    /// An acquire, create or renew starts or extends a term, valid until `started_at + renew
    /// deadline`; a response that comes after that deadline starts nothing.
    pub(crate) fn written(&mut self, write: &Write, started_at: Instant, now: Instant) {
        self.tick(now);
        self.seen = Some((write.record.clone(), now));
        if write.kind == WriteKind::Release {
            return;
        }
        let valid_until = started_at + self.renew_deadline;
        if now >= valid_until {
            return;
        }
        match &mut self.term {
            Some(term) if term.is_current(now) => {
                term.renewed_at = started_at;
                term.valid_until = valid_until;
            }
            _ => {
                self.term = Some(Term {
                    started_at: now,
                    renewed_at: started_at,
                    valid_until,
                    ended_at: None,
                });
            }
        }
    }

    /// Stops leading at `now` and, if the Lease still names us, says how to release it.
    pub(crate) fn release(
        &mut self,
        lease: Option<&Observed>,
        now: Instant,
        wall_micros: i64,
    ) -> Option<Write> {
        self.stop(now);
        let lease = lease?;
        if lease.record.holder.as_deref() != Some(self.identity.as_str()) {
            return None;
        }
        let mut record = lease.record.clone();
        record.holder = None;
        record.renew_time = Some(next_stamp(record.renew_time, wall_micros));
        Some(Write {
            kind: WriteKind::Release,
            record,
            resource_version: Some(lease.resource_version.clone()),
        })
    }

    fn record_held_since(&self, stamp: i64, transitions: i32) -> Record {
        Record {
            holder: Some(self.identity.clone()),
            lease_duration: Some(self.lease_duration),
            acquire_time: Some(stamp),
            renew_time: Some(stamp),
            transitions,
        }
    }

    fn end_term(&mut self, at: Instant) {
        if let Some(mut term) = self.term.take() {
            term.ended_at = Some(at.min(term.valid_until));
            self.last_term = Some(term);
        }
    }
}

/// A `renewTime` strictly after `previous`, so observers always see a renewal as a change.
fn next_stamp(previous: Option<i64>, wall_micros: i64) -> i64 {
    previous.map_or(wall_micros, |previous| {
        wall_micros.max(previous.saturating_add(1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_secs(2);
    const DEADLINE: Duration = Duration::from_millis(1500);

    fn held_by(holder: Option<&str>, renew_time: i64, rv: &str) -> Observed {
        Observed {
            record: Record {
                holder: holder.map(str::to_owned),
                lease_duration: Some(LEASE),
                acquire_time: Some(0),
                renew_time: Some(renew_time),
                transitions: 4,
            },
            resource_version: rv.into(),
        }
    }

    fn write(step: Step) -> Write {
        match step {
            Step::Write(write) => write,
            Step::Wait { .. } => panic!("expected a write, got {step:?}"),
        }
    }

    #[test]
    fn a_missing_lease_is_created_holding_it_with_whole_seconds() {
        let mut state = State::new("me", Duration::from_millis(1500), Duration::from_secs(1));
        let write = write(state.observe(None, Instant::now(), 7));
        assert_eq!(write.kind, WriteKind::Create);
        assert_eq!(write.resource_version, None);
        assert_eq!(write.record.holder.as_deref(), Some("me"));
        assert_eq!(write.record.lease_duration, Some(Duration::from_secs(2)));
        assert_eq!(write.record.transitions, 0);
    }

    #[test]
    fn an_empty_lease_is_acquired_at_once_counting_a_transition() {
        let mut state = State::new("me", LEASE, DEADLINE);
        let write = write(state.observe(Some(&held_by(None, 5, "9")), Instant::now(), 7));
        assert_eq!(write.kind, WriteKind::Acquire);
        assert_eq!(write.resource_version.as_deref(), Some("9"));
        assert_eq!(write.record.transitions, 5);
    }

    #[test]
    fn a_lease_held_by_another_expires_a_lease_duration_after_we_first_saw_it() {
        let start = Instant::now();
        let mut state = State::new("me", LEASE, DEADLINE);
        let other = held_by(Some("other"), 5, "9");
        let expected = Step::Wait {
            holder: "other".into(),
            expires_at: start + LEASE,
        };
        assert_eq!(state.observe(Some(&other), start, 0), expected);
        // Its renewTime is far in the past by our wall clock: irrelevant, only our clock counts.
        assert_eq!(
            state.observe(Some(&other), start + LEASE / 2, i64::MAX),
            expected
        );
        let write = write(state.observe(Some(&other), start + LEASE, 0));
        assert_eq!(write.kind, WriteKind::Acquire);
        assert_eq!(write.record.transitions, 5);
    }

    #[test]
    fn a_takeover_that_is_never_renewed_ends_as_its_record_states_not_a_lease_after_we_saw_it() {
        let start = Instant::now();
        let second: i64 = 1_000_000;
        let mut state = State::new("me", LEASE, DEADLINE).unrenewed_holder("sharder");
        // Taken over (a 2 s term) 1.5 s before our wall clock's 10 s: 0.5 s of it are left.
        let taken = held_by(Some("sharder"), 10 * second - 3 * second / 2, "9");
        assert_eq!(
            state.observe(Some(&taken), start, 10 * second),
            Step::Wait {
                holder: "sharder".into(),
                expires_at: start + Duration::from_millis(500),
            }
        );
        let write = write(state.observe(
            Some(&taken),
            start + Duration::from_millis(500),
            10 * second + second / 2,
        ));
        assert_eq!(write.kind, WriteKind::Acquire);
        // A term that ended before we saw it: acquired at once.
        let mut late = State::new("me", LEASE, DEADLINE).unrenewed_holder("sharder");
        let over = held_by(Some("sharder"), 0, "9");
        assert_eq!(
            write_kind(late.observe(Some(&over), start, 10 * second)),
            Some(WriteKind::Acquire)
        );
        // A record stamped in our future: never a longer wait than for anyone else.
        let mut skewed = State::new("me", LEASE, DEADLINE).unrenewed_holder("sharder");
        let ahead = held_by(Some("sharder"), 100 * second, "9");
        assert_eq!(
            skewed.observe(Some(&ahead), start, 0),
            Step::Wait {
                holder: "sharder".into(),
                expires_at: start + LEASE,
            }
        );
        // Another holder is judged as always.
        let mut other = State::new("me", LEASE, DEADLINE).unrenewed_holder("sharder");
        let held = held_by(Some("other"), 0, "9");
        assert_eq!(
            other.observe(Some(&held), start, 10 * second),
            Step::Wait {
                holder: "other".into(),
                expires_at: start + LEASE,
            }
        );
    }

    fn write_kind(step: Step) -> Option<WriteKind> {
        match step {
            Step::Write(write) => Some(write.kind),
            Step::Wait { .. } => None,
        }
    }

    #[test]
    fn any_change_of_the_record_restarts_the_wait_even_a_renew_time_that_goes_back() {
        let start = Instant::now();
        let mut state = State::new("me", LEASE, DEADLINE);
        state.observe(Some(&held_by(Some("other"), 5, "9")), start, 0);
        let later = start + LEASE - Duration::from_millis(1);
        let step = state.observe(Some(&held_by(Some("other"), 4, "10")), later, 0);
        assert_eq!(
            step,
            Step::Wait {
                holder: "other".into(),
                expires_at: later + LEASE
            }
        );
    }

    #[test]
    fn a_leader_renews_and_leads_until_the_deadline_after_its_last_write_began() {
        let start = Instant::now();
        let mut state = State::new("me", LEASE, DEADLINE);
        let create = write(state.observe(None, start, 100));
        let responded = start + Duration::from_millis(50);
        state.written(&create, start, responded);
        let term = state.term().expect("a term started");
        assert_eq!(
            (term.started_at, term.valid_until),
            (responded, start + DEADLINE)
        );

        let mine = Observed {
            record: create.record.clone(),
            resource_version: "1".into(),
        };
        let renew_at = start + Duration::from_secs(1);
        let renew = write(state.observe(Some(&mine), renew_at, 100));
        assert_eq!(renew.kind, WriteKind::Renew);
        assert_eq!(
            renew.record.renew_time,
            Some(101),
            "renewTime strictly increases"
        );
        assert_eq!(renew.record.transitions, 0);
        state.written(&renew, renew_at, renew_at + Duration::from_millis(10));
        let term = state.term().expect("still leading");
        assert_eq!(
            (term.started_at, term.valid_until),
            (responded, renew_at + DEADLINE)
        );

        state.tick(renew_at + DEADLINE - Duration::from_millis(1));
        assert!(state.is_leading(renew_at + DEADLINE - Duration::from_millis(1)));
        state.tick(renew_at + DEADLINE + Duration::from_secs(5));
        assert!(state.term().is_none());
        assert_eq!(
            state.last_term().and_then(|t| t.ended_at),
            Some(renew_at + DEADLINE)
        );
    }

    #[test]
    fn a_write_whose_response_comes_after_the_renew_deadline_starts_no_term() {
        let start = Instant::now();
        let mut state = State::new("me", LEASE, DEADLINE);
        let create = write(state.observe(None, start, 0));
        state.written(&create, start, start + DEADLINE);
        assert!(state.term().is_none());
    }

    #[test]
    fn a_leader_that_sees_another_holder_stops_leading_at_once() {
        let start = Instant::now();
        let mut state = State::new("me", LEASE, DEADLINE);
        let create = write(state.observe(None, start, 0));
        state.written(&create, start, start);
        let seen = start + Duration::from_millis(100);
        assert!(matches!(
            state.observe(Some(&held_by(Some("other"), 5, "3")), seen, 0),
            Step::Wait { .. }
        ));
        assert!(!state.is_leading(seen));
        assert_eq!(state.last_term().and_then(|t| t.ended_at), Some(seen));
    }

    #[test]
    fn release_clears_the_holder_only_when_the_lease_names_us() {
        let now = Instant::now();
        let mut state = State::new("me", LEASE, DEADLINE);
        assert_eq!(
            state.release(Some(&held_by(Some("other"), 5, "3")), now, 0),
            None
        );
        assert_eq!(state.release(None, now, 0), None);
        let release = state
            .release(Some(&held_by(Some("me"), 5, "3")), now, 0)
            .expect("ours");
        assert_eq!(release.kind, WriteKind::Release);
        assert_eq!(release.record.holder, None);
        assert_eq!(release.record.transitions, 4);
        assert_eq!(release.record.renew_time, Some(6));
        assert_eq!(release.resource_version.as_deref(), Some("3"));
    }
}
