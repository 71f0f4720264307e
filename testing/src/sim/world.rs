//! Holds what one simulated run's test body works with: the fake, its clients, the seeded
//! generator, the log and the oracles' findings.

use std::collections::BTreeSet;
use std::fmt::{self, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt as _, SeedableRng as _};
use tokio::sync::Notify;
use tokio::time::{Duration, Instant};

use super::faults::{self, Faults, Injected, Plan, Request};
use super::network::Network;
use super::oracle::Reconciles;
use super::schedule::{Kind, Schedule};
use crate::FakeApiServer;

/// One run of a [`Simulation`](super::Simulation), handed to its test body; cheap to clone.
///
/// Everything random in the run comes from its seed through this: the faults the clients meet,
/// and whatever the body draws with [`random`](Self::random) or [`chance`](Self::chance).
#[derive(Clone, Debug)]
pub struct World {
    shared: Arc<Shared>,
}

/// The state of one run, shared by its clients and the body.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) seed: u64,
    pub(crate) fake: FakeApiServer,
    start: Instant,
    faults: Faults,
    faulting: AtomicBool,
    rng: Mutex<Xoshiro256PlusPlus>,
    log: Mutex<String>,
    /// The faults that took effect and the body's notes, each after its virtual time.
    timeline: Mutex<String>,
    /// Numbers the faults drawn and says which take effect.
    pub(crate) schedule: Schedule,
    requests: AtomicU64,
    watches: AtomicU64,
    violations: Mutex<Vec<String>>,
    /// When the outage on now ends, if one is on.
    outage_ends: Mutex<Option<Instant>>,
    /// Wakes the open watches, to end at the next outage. A `Notify`, which wakes its waiters in
    /// the order they came; tokio's `watch` picks an order at random, which no seed replays.
    outages: Arc<Notify>,
}

impl World {
    /// A run from `seed` with a fresh deterministic fake, keeping the faults numbered in `keep`
    /// (all when `None`); on the run's runtime.
    pub(crate) fn new(seed: u64, faults: Faults, keep: Option<BTreeSet<u64>>) -> Self {
        Self {
            shared: Arc::new(Shared {
                seed,
                fake: FakeApiServer::deterministic(seed),
                start: Instant::now(),
                faults,
                faulting: AtomicBool::new(true),
                rng: Mutex::new(Xoshiro256PlusPlus::seed_from_u64(seed)),
                log: Mutex::new(String::new()),
                timeline: Mutex::new(String::new()),
                schedule: Schedule::new(keep),
                requests: AtomicU64::new(0),
                watches: AtomicU64::new(0),
                violations: Mutex::new(Vec::new()),
                outage_ends: Mutex::new(None),
                outages: Arc::default(),
            }),
        }
    }

    /// The run's seed.
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.shared.seed
    }

    /// The fake API server, to register kinds, seed objects and read them back directly
    /// (requests made through it, not a client, meet no fault and are not logged).
    #[must_use]
    pub fn fake(&self) -> &FakeApiServer {
        &self.shared.fake
    }

    /// A client whose requests pass the run's faults and are logged under `name`; its default
    /// namespace is `default`.
    #[must_use]
    pub fn client(&self, name: &str) -> kube::Client {
        let network = Network {
            shared: Arc::clone(&self.shared),
            client: Arc::from(name),
        };
        kube::Client::new(network, "default")
    }

    /// Virtual time since the run began.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.shared.start.elapsed()
    }

    /// A number in `range` drawn from the run's seed.
    ///
    /// # Panics
    /// When `range` is empty.
    #[must_use]
    pub fn random(&self, range: std::ops::Range<u64>) -> u64 {
        self.shared.rng.lock().random_range(range)
    }

    /// True with probability `p` (0 to 1), drawn from the run's seed.
    #[must_use]
    pub fn chance(&self, p: f64) -> bool {
        self.shared.rng.lock().random_bool(p.clamp(0.0, 1.0))
    }

    /// Adds a line to the run's log and to its timeline of faults, after the virtual time.
    pub fn note(&self, line: impl fmt::Display) {
        self.shared.log(format_args!("{line}"));
        self.shared.mark(format_args!("{line}"));
    }

    /// The run's log so far: one line per request, watch event delivered, broken watch and
    /// note, each after its virtual time in milliseconds; a line a fault made begins with its
    /// number (`fault 12: …`).
    #[must_use]
    pub fn log(&self) -> String {
        self.shared.log.lock().clone()
    }

    /// The run's timeline so far: each fault that took effect (with its number, as
    /// [`Simulation::keep_faults`](super::Simulation::keep_faults) takes it) and each note,
    /// after its virtual time in milliseconds. Latency and delivery delays, which the log does
    /// not show, are here too.
    #[must_use]
    pub fn timeline(&self) -> String {
        self.shared.timeline.lock().clone()
    }

    /// The numbers of the faults that took effect so far, in the order they were drawn.
    pub(crate) fn faults_taken(&self) -> Vec<(u64, Kind)> {
        self.shared.schedule.taken()
    }

    /// Ends failed requests and broken watches for the rest of the run (latency and delivery
    /// delays go on): from here the system under test should converge.
    pub fn stop_faults(&self) {
        self.shared.faulting.store(false, Ordering::SeqCst);
        self.note("faults stop");
    }

    /// Records a broken invariant: the run fails when it ends, naming this and its seed.
    pub fn violation(&self, what: impl Into<String>) {
        let what = what.into();
        self.note(format_args!("violation: {what}"));
        self.shared.violations.lock().push(what);
    }

    /// The invariants broken so far.
    #[must_use]
    pub fn violations(&self) -> Vec<String> {
        self.shared.violations.lock().clone()
    }

    /// An oracle that records a violation when two reconciles of one key overlap.
    #[must_use]
    pub fn reconciles(&self) -> Reconciles {
        Reconciles::new(self.clone())
    }

    /// Waits until `fixed_point` holds, looking every 100 ms of virtual time, for at most
    /// `within`; true when it held. When it never did, records a violation with the last reason
    /// it gave.
    pub async fn settle(
        &self,
        within: Duration,
        mut fixed_point: impl FnMut() -> Result<(), String>,
    ) -> bool {
        let deadline = Instant::now() + within;
        loop {
            let why = match fixed_point() {
                Ok(()) => {
                    self.note("fixed point reached");
                    return true;
                }
                Err(why) => why,
            };
            if Instant::now() >= deadline {
                self.violation(format!(
                    "no fixed point {within:?} after faults stopped: {why}"
                ));
                return false;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until no stored object has changed for `window` of virtual time, for at most a
    /// minute, else records a violation: what a fixed point's last reconciles set going without
    /// holding them up (the Events a recorder writes after them) lands before a quiet pass.
    pub async fn calm(&self, window: Duration) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let (mut seen, mut since) = (self.shared.fake.resource_version(), Instant::now());
        while since.elapsed() < window {
            if Instant::now() >= deadline {
                self.violation("stored objects kept changing after the fixed point");
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = self.shared.fake.resource_version();
            if now != seen {
                (seen, since) = (now, Instant::now());
            }
        }
    }

    /// Lets `window` of virtual time pass and records a violation if any stored object changed
    /// meanwhile: at a fixed point, reconciles (which the caller makes happen in the window)
    /// write nothing.
    pub async fn quiet(&self, window: Duration) {
        let before = self.shared.fake.resource_version();
        self.note("quiet pass begins");
        tokio::time::sleep(window).await;
        let after = self.shared.fake.resource_version();
        if after == before {
            self.note("quiet pass wrote nothing");
        } else {
            self.violation(format!(
                "a quiet pass of {window:?} changed stored objects (resourceVersion {before} \
                 to {after})"
            ));
        }
    }
}

impl Shared {
    /// What happens to the next request, and its number.
    pub(crate) fn plan(&self, request: Request) -> (u64, Plan) {
        let id = self.requests.fetch_add(1, Ordering::SeqCst) + 1;
        let faulting = self.faulting.load(Ordering::SeqCst);
        if faulting && self.in_outage() {
            let refused = Plan {
                latency: (Duration::ZERO, None),
                // The outage's doing, not a fault of its own.
                failure: Some((Injected::Reset, None)),
                watch: None,
            };
            return (id, refused);
        }
        let plan = self
            .faults
            .plan(&mut self.rng.lock(), &self.schedule, request, faulting);
        (id, plan)
    }

    /// The next watch's number.
    /// Whether an outage is on now, beginning one as the seed decides.
    fn in_outage(&self) -> bool {
        let now = Instant::now();
        let mut ends = self.outage_ends.lock();
        if ends.is_some_and(|end| now < end) {
            return true;
        }
        let Some((length, number)) = self.faults.outage(&mut self.rng.lock(), &self.schedule)
        else {
            return false;
        };
        *ends = Some(now + length);
        drop(ends);
        self.fault(
            number,
            format_args!("outage begins, for {} ms", length.as_millis()),
        );
        self.outages.notify_waiters();
        true
    }

    /// Completes when the next outage begins.
    pub(crate) fn next_outage(&self) -> impl Future<Output = ()> + Send + 'static {
        Arc::clone(&self.outages).notified_owned()
    }

    pub(crate) fn next_watch(&self) -> u64 {
        self.watches.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// A uniform delay from zero to `max` and its fault number; zero when the schedule
    /// suppresses it.
    pub(crate) fn delay(&self, max: Duration) -> (Duration, Option<u64>) {
        faults::delay(&mut self.rng.lock(), &self.schedule, Kind::Delay, max)
    }

    /// Logs a line that fault `number` made, and adds it to the timeline.
    pub(crate) fn fault(&self, number: u64, line: fmt::Arguments<'_>) {
        self.log(format_args!("fault {number}: {line}"));
        self.mark(format_args!("fault {number}: {line}"));
    }

    /// Adds a line to the timeline alone, after the virtual time in milliseconds.
    pub(crate) fn mark(&self, line: fmt::Arguments<'_>) {
        let millis = self.start.elapsed().as_millis();
        let mut timeline = self.timeline.lock();
        // Writing to a String cannot fail.
        let _ = writeln!(timeline, "{millis:>9} {line}");
    }

    /// Appends a line to the log, after the virtual time in milliseconds.
    pub(crate) fn log(&self, line: fmt::Arguments<'_>) {
        let millis = self.start.elapsed().as_millis();
        let mut log = self.log.lock();
        // Writing to a String cannot fail.
        let _ = writeln!(log, "{millis:>9} {line}");
    }
}
