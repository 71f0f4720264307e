//! Simulates candidates against a Lease store with resourceVersion preconditions and checks
//! that no two candidates ever believe they lead at the same moment.
//!
//! Time is simulated; requests take random time to reach the store and to come back (or never
//! come back); each candidate's wall clock is skewed arbitrarily, jumps back and forth and may tick
//! only once a second, since only the monotonic clock may matter.

use std::time::Duration;

use proptest::prelude::*;
use tokio::time::Instant;

use crate::leader::state::{Observed, State, Step, Write};

/// A Lease in a store that applies a write only if its resourceVersion still matches.
#[derive(Default)]
struct Store {
    lease: Option<Observed>,
    version: u64,
}

impl Store {
    fn apply(&mut self, write: &Write) -> bool {
        let current = self
            .lease
            .as_ref()
            .map(|lease| lease.resource_version.as_str());
        if current != write.resource_version.as_deref() {
            return false;
        }
        self.version += 1;
        self.lease = Some(Observed {
            record: write.record.clone(),
            resource_version: self.version.to_string(),
        });
        true
    }
}

/// A write on its way: it reaches the store at `commit_at` and its answer comes at `respond_at`.
struct Flight {
    write: Write,
    started_at: Instant,
    commit_at: Instant,
    respond_at: Option<Instant>,
    committed: Option<bool>,
}

struct Candidate {
    state: State,
    wall_skew_micros: i64,
    flight: Option<Flight>,
    /// The start of the term we last saw, to notice when it ends.
    current: Option<Instant>,
    terms: Vec<(Instant, Instant)>,
}

impl Candidate {
    /// Records a term that ended or started since the last look.
    fn track(&mut self) {
        let now = self.state.term().map(|term| term.started_at);
        if now != self.current {
            if let Some(start) = self.current {
                let ended = self
                    .state
                    .last_term()
                    .expect("an ended term is kept as last_term");
                assert_eq!(ended.started_at, start, "terms end one at a time");
                self.terms.push((start, ended.end()));
            }
            self.current = now;
        }
    }
}

/// One step of the simulation: after `gap`, candidate `who` acts (unless its write is in flight).
#[derive(Clone, Debug)]
struct Op {
    who: usize,
    gap: Duration,
    to_store: Duration,
    back: Option<Duration>,
    release: bool,
    /// A step of the candidate's wall clock (an NTP correction), in microseconds.
    wall_jump: i64,
}

fn op(candidates: usize) -> impl Strategy<Value = Op> {
    (
        0..candidates,
        0..700_u64,
        0..500_u64,
        prop::option::weighted(0.9, 0..500_u64),
        prop::bool::weighted(0.05),
        prop::option::weighted(0.2, -3_000_000..3_000_000_i64),
    )
        .prop_map(|(who, gap, to_store, back, release, wall_jump)| Op {
            who,
            gap: Duration::from_millis(gap),
            to_store: Duration::from_millis(to_store),
            back: back.map(Duration::from_millis),
            release,
            wall_jump: wall_jump.unwrap_or(0),
        })
}

/// Runs `ops` and returns every candidate's terms.
fn simulate(
    lease: Duration,
    deadline: Duration,
    tick_micros: i64,
    skews: &[i64],
    ops: &[Op],
) -> Vec<Vec<(Instant, Instant)>> {
    let origin = Instant::now();
    let mut now = origin;
    let mut store = Store::default();
    let mut candidates: Vec<Candidate> = skews
        .iter()
        .enumerate()
        .map(|(i, skew)| Candidate {
            state: State::new(format!("candidate-{i}"), lease, deadline),
            wall_skew_micros: *skew,
            flight: None,
            current: None,
            terms: Vec::new(),
        })
        .collect();
    for op in ops {
        now += op.gap;
        deliver(&mut store, &mut candidates, now);
        let candidate = &mut candidates[op.who];
        candidate.wall_skew_micros += op.wall_jump;
        if candidate.flight.is_some() {
            continue;
        }
        let elapsed = i64::try_from((now - origin).as_micros()).expect("short simulations");
        let wall = (elapsed + candidate.wall_skew_micros) / tick_micros * tick_micros;
        let write = if op.release {
            candidate.state.release(store.lease.as_ref(), now, wall)
        } else {
            match candidate.state.observe(store.lease.as_ref(), now, wall) {
                Step::Write(write) => Some(write),
                Step::Wait { .. } => None,
            }
        };
        candidate.track();
        if let Some(write) = write {
            let commit_at = now + op.to_store;
            candidate.flight = Some(Flight {
                write,
                started_at: now,
                commit_at,
                respond_at: op.back.map(|back| commit_at + back),
                committed: None,
            });
        }
    }
    // Let everything in flight land, then close the open terms at their deadlines.
    deliver(&mut store, &mut candidates, now + Duration::from_secs(3600));
    candidates
        .into_iter()
        .map(|mut candidate| {
            if let (Some(start), Some(term)) = (candidate.current, candidate.state.term()) {
                candidate.terms.push((start, term.end()));
            }
            candidate.terms
        })
        .collect()
}

/// Delivers, in time order, every commit and response due by `until`.
fn deliver(store: &mut Store, candidates: &mut [Candidate], until: Instant) {
    loop {
        let next = candidates
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let flight = c.flight.as_ref()?;
                let at = if flight.committed.is_none() {
                    flight.commit_at
                } else {
                    flight.respond_at?
                };
                (at <= until).then_some((at, i))
            })
            .min();
        let Some((at, i)) = next else { return };
        let candidate = &mut candidates[i];
        let flight = candidate.flight.as_mut().expect("chosen for its flight");
        if flight.committed.is_none() {
            flight.committed = Some(store.apply(&flight.write));
            if flight.respond_at.is_none() {
                // The answer is lost: the candidate gives up on this write without news.
                candidate.flight = None;
                candidate.state.tick(at);
                candidate.track();
            }
            continue;
        }
        let flight = candidate.flight.take().expect("chosen for its flight");
        if flight.committed == Some(true) {
            candidate
                .state
                .written(&flight.write, flight.started_at, at);
        } else {
            candidate.state.tick(at);
        }
        candidate.track();
    }
}

fn overlaps(terms: &[Vec<(Instant, Instant)>]) -> Option<String> {
    for (i, mine) in terms.iter().enumerate() {
        for (j, theirs) in terms.iter().enumerate().skip(i + 1) {
            for a in mine {
                for b in theirs {
                    if a.0 < b.1 && b.0 < a.1 {
                        return Some(format!("candidate {i} {a:?} overlaps candidate {j} {b:?}"));
                    }
                }
            }
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_two_candidates_ever_believe_they_lead_at_the_same_moment(
        lease_seconds in 1..4_u64,
        deadline_per_mille in 100..1000_u64,
        wall_tick_micros in prop_oneof![Just(1_i64), Just(1_000_000)],
        skews in prop::collection::vec(-3_600_000_000_i64..3_600_000_000, 2..=3),
        ops in prop::collection::vec(op(3), 1..300),
    ) {
        let lease = Duration::from_secs(lease_seconds);
        let deadline = lease.mul_f64(deadline_per_mille as f64 / 1000.0);
        let ops: Vec<Op> = ops.into_iter().filter(|op| op.who < skews.len()).collect();
        let terms = simulate(lease, deadline, wall_tick_micros, &skews, &ops);
        prop_assert_eq!(overlaps(&terms), None);
    }
}

/// Fast, reliable writes and a candidate that goes silent: the other takes over.
#[test]
fn a_silent_leader_is_replaced_and_a_released_lease_is_taken_at_once() {
    let lease = Duration::from_secs(2);
    let deadline = Duration::from_millis(1500);
    let step = |who, gap_ms, release| Op {
        who,
        gap: Duration::from_millis(gap_ms),
        to_store: Duration::from_millis(5),
        back: Some(Duration::from_millis(5)),
        release,
        wall_jump: 0,
    };
    // 0 creates the Lease and renews; then goes silent while 1 polls until it expires.
    let mut ops = vec![step(0, 0, false), step(1, 20, false), step(0, 300, false)];
    ops.extend((0..10).map(|_| step(1, 300, false)));
    // 1 leads now; it releases, and 0 takes over on its next try.
    ops.extend([step(1, 100, true), step(0, 20, false), step(0, 20, false)]);
    let terms = simulate(lease, deadline, 1, &[0, 0], &ops);
    assert_eq!(overlaps(&terms), None);
    assert_eq!(
        terms[0].len(),
        2,
        "0 led, lost by silence, led again: {terms:?}"
    );
    assert_eq!(terms[1].len(), 1, "1 led once: {terms:?}");
    let (replaced_at, released_at) = (terms[1][0].0, terms[1][0].1);
    assert!(
        replaced_at - terms[0][0].1 >= lease.saturating_sub(deadline),
        "takeover waited for expiry"
    );
    assert!(
        terms[0][1].0 - released_at <= Duration::from_millis(50),
        "release hands over at once"
    );
}

/// Shows the check has teeth: with a renew deadline longer than the lease, beliefs overlap.
#[test]
fn with_a_renew_deadline_longer_than_the_lease_the_simulation_finds_an_overlap() {
    let step = |who, gap_ms| Op {
        who,
        gap: Duration::from_millis(gap_ms),
        to_store: Duration::from_millis(5),
        back: Some(Duration::from_millis(5)),
        release: false,
        wall_jump: 0,
    };
    let ops = [step(0, 0), step(1, 20), step(1, 2100)];
    let terms = simulate(
        Duration::from_secs(2),
        Duration::from_secs(3),
        1,
        &[0, 0],
        &ops,
    );
    assert!(overlaps(&terms).is_some(), "{terms:?}");
}
