//! Runs a test body against the fake API server on a virtual clock, every choice drawn from one
//! seed, so that a race found once is replayed at will.
//!
//! A [`Simulation`] runs its body once per seed, each time on a fresh current-thread tokio
//! runtime whose clock is paused (it jumps ahead whenever every task waits), with a fresh
//! [`FakeApiServer::deterministic`](crate::FakeApiServer::deterministic) fake. The body gets a
//! [`World`]: clients whose requests pass the seed's [`Faults`] (latency, 409, 429 with
//! `Retry-After`, 500, timeouts that lose a write's answer, reset connections; watch events
//! delayed per watch, never reordered within one; watches dropped or expired with 410 Gone),
//! the run's log, and oracles: [`World::reconciles`] (never two reconciles of one key at once),
//! [`World::settle`] (a fixed point within a bounded virtual time once faults stop) and
//! [`World::quiet`] (a pass at the fixed point writes nothing). A failing seed fails the test
//! with one line that reruns it alone (`KUBEWARD_SIM_SEED=…`).
//!
//! Every fault a run draws (a failed request, a broken watch, an outage, a request's latency,
//! an event's delivery delay) is numbered in the order drawn, and a run can keep only some
//! (`KUBEWARD_SIM_KEEP=12,40`, [`Simulation::keep_faults`]): the others are still drawn, so
//! the rest of the run replays, but do nothing. [`Simulation::shrink`] uses that to shrink a
//! failure to the fewest faults that still fail it alike, and prints them as a timeline;
//! [`Simulation::check`] shrinks the failure it reports (at most 200 runs, deterministic:
//! runs are counted, not timed).
//!
//! Same seed, same run: the log of requests, deliveries and notes is byte-identical, as long as
//! the code under test takes time, randomness and spawning from tokio and the [`World`] (no
//! OS thread, no `std::time`, no unseeded generator, no unbiased `select!` on a path the run
//! takes). kubeward's own jitter follows the seed by itself: its generator restarts from the
//! seed of the run that starts ([`take_starting_seed`]).
//!
//! Why tokio's paused clock and a seeded fake rather than a simulation library: madsim
//! replaces tokio and the network under the whole dependency tree, which a workspace on kube's
//! hyper client cannot use without patching its dependencies; turmoil simulates hosts and
//! TCP, but a controller's races come from the API server (stale watches, conflicts, lost
//! answers), which the fake models and turmoil does not. Kubernetes clients talk to the fake
//! through a `tower` service, so the faults sit in that service and need no network at all.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::Api;
//! use kube::api::{ObjectMeta, PostParams};
//! use kubeward_testing::sim::{Faults, Simulation};
//!
//! Simulation::new()
//!     .faults(Faults::none())
//!     .seeds(0..3)
//!     .check(|world| async move {
//!         world.fake().register::<ConfigMap>();
//!         let api: Api<ConfigMap> = Api::default_namespaced(world.client("test"));
//!         let meta = ObjectMeta { name: Some("a".into()), ..ObjectMeta::default() };
//!         let cm = ConfigMap { metadata: meta, ..ConfigMap::default() };
//!         api.create(&PostParams::default(), &cm).await.expect("no faults");
//!     });
//! ```
//!
//! Not done yet: pauses of a leader past its Lease, crashes and restarts with an empty cache,
//! compactions.

mod faults;
mod network;
mod oracle;
mod schedule;
mod shrink;
mod starting_seed;
mod world;

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::panic::AssertUnwindSafe;

use tokio::time::Duration;

pub use faults::Faults;
pub use oracle::{Reconciles, Reconciling};
pub use starting_seed::take_starting_seed;
pub use world::World;

/// The environment variable that runs one seed alone: `KUBEWARD_SIM_SEED=1234 cargo test …`.
pub const SEED_VAR: &str = "KUBEWARD_SIM_SEED";

/// The environment variable that runs seeds `0..N` instead of a test's own range, for a
/// longer run: `KUBEWARD_SIM_SEEDS=2000 cargo test …`.
pub const SEEDS_VAR: &str = "KUBEWARD_SIM_SEEDS";

/// The environment variable that keeps only the faults it numbers, as a shrunk failure's rerun
/// line says: `KUBEWARD_SIM_SEED=3 KUBEWARD_SIM_KEEP=12,40 cargo test …` (`none` for no fault).
pub const KEEP_VAR: &str = "KUBEWARD_SIM_KEEP";

/// The environment variable that sets how many runs [`Simulation::check`] may spend shrinking
/// a failure (`0`: none); see [`Simulation::shrink_runs`].
pub const SHRINK_VAR: &str = "KUBEWARD_SIM_SHRINK";

/// Runs a test body once per seed on a paused clock against a faulty fake API server.
#[derive(Clone, Debug)]
#[must_use]
pub struct Simulation {
    faults: Faults,
    seeds: Range<u64>,
    time_limit: Duration,
    keep: Option<BTreeSet<u64>>,
    shrink_runs: u32,
}

/// A run that passed.
#[derive(Clone, Debug)]
pub struct Run {
    seed: u64,
    log: String,
    elapsed: Duration,
}

/// A run that failed: the body panicked, an oracle recorded a violation, or the virtual time
/// limit passed.
#[derive(Clone, Debug)]
pub struct Failed {
    seed: u64,
    reasons: Vec<String>,
    log: String,
    /// Boxed: a `Result<Run, Failed>` stays small.
    record: Box<FaultRecord>,
}

/// The faults of a failed run.
#[derive(Clone, Debug)]
struct FaultRecord {
    timeline: String,
    /// The faults kept, when the run did not keep them all.
    keep: Option<BTreeSet<u64>>,
    /// The faults that took effect: their numbers and what they did.
    faults: Vec<(u64, schedule::Kind)>,
    /// How it was shrunk, when it was.
    shrunk: Option<shrink::Shrunk>,
}

impl Default for Simulation {
    fn default() -> Self {
        Self::new()
    }
}

impl Simulation {
    /// Seeds `0..50` with the default [`Faults`], an hour of virtual time per run, every fault
    /// kept, and up to 200 runs to shrink a failure.
    pub fn new() -> Self {
        Self {
            faults: Faults::default(),
            seeds: 0..50,
            time_limit: Duration::from_secs(3600),
            keep: None,
            shrink_runs: 200,
        }
    }

    /// The faults each run draws from.
    pub fn faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    /// The seeds [`check`](Self::check) and [`find`](Self::find) run, unless
    /// [`SEED_VAR`] or [`SEEDS_VAR`] says otherwise.
    pub fn seeds(mut self, seeds: Range<u64>) -> Self {
        self.seeds = seeds;
        self
    }

    /// How much virtual time a run may take before it fails (default an hour): a body that
    /// never returns fails at this, never hangs.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }

    /// Keeps only the faults numbered in `numbers` (see [`World::timeline`]): every other fault
    /// the seed draws is drawn, so the rest of the run replays, but has no effect. A shrunk
    /// failure's rerun line sets this through [`KEEP_VAR`], which [`check`](Self::check) and
    /// [`find`](Self::find) read.
    pub fn keep_faults(mut self, numbers: impl IntoIterator<Item = u64>) -> Self {
        self.keep = Some(numbers.into_iter().collect());
        self
    }

    /// How many runs [`shrink`](Self::shrink) may take (default 200; [`SHRINK_VAR`], when set,
    /// says instead); it stops there with the smallest failure found so far. Runs
    /// count, not wall time, so that a failure shrinks alike on every machine.
    pub fn shrink_runs(mut self, runs: u32) -> Self {
        self.shrink_runs = runs;
        self
    }

    /// The seeds to run: [`SEED_VAR`] alone when set, `0..`[`SEEDS_VAR`] when set, else the
    /// configured range.
    ///
    /// # Panics
    /// When either variable is set to something other than a number, naming it.
    #[must_use]
    pub fn seed_list(&self) -> Range<u64> {
        let read = |var: &str| {
            std::env::var(var).ok().map(|text| {
                text.trim().parse::<u64>().unwrap_or_else(|_| {
                    panic!("{var}={text:?} is not a seed: give a whole number such as 1234")
                })
            })
        };
        match (read(SEED_VAR), read(SEEDS_VAR)) {
            (Some(seed), _) => seed..seed.saturating_add(1),
            (None, Some(count)) => 0..count,
            (None, None) => self.seeds.clone(),
        }
    }

    /// Runs `body` once with `seed`.
    ///
    /// # Errors
    /// The body panicked, an oracle recorded a violation, or the run passed its time limit.
    ///
    /// # Panics
    /// When the runtime cannot be built (the system refused its resources).
    pub fn run<F, Fut>(&self, seed: u64, body: F) -> Result<Run, Failed>
    where
        F: FnOnce(World) -> Fut,
        Fut: Future<Output = ()>,
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a current-thread runtime builds");
        let limit = self.time_limit;
        starting_seed::starts(seed);
        let world =
            runtime.block_on(async { World::new(seed, self.faults.clone(), self.keep.clone()) });
        let body_world = world.clone();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            runtime.block_on(
                async move { tokio::time::timeout(limit, body(body_world)).await.is_ok() },
            )
        }));
        let elapsed = runtime.block_on(async { world.elapsed() });
        // Tasks the body left running end here, before the log is read.
        drop(runtime);
        let mut reasons = world.violations();
        match outcome {
            Ok(true) => {}
            Ok(false) => reasons.push(format!(
                "the run did not finish within {limit:?} of virtual time"
            )),
            Err(panic) => reasons.push(format!("the body panicked: {}", panic_message(&*panic))),
        }
        let log = world.log();
        if reasons.is_empty() {
            Ok(Run { seed, log, elapsed })
        } else {
            Err(Failed {
                seed,
                reasons,
                log,
                record: Box::new(FaultRecord {
                    timeline: world.timeline(),
                    keep: self.keep.clone(),
                    faults: world.faults_taken(),
                    shrunk: None,
                }),
            })
        }
    }

    /// Runs `body` for each seed and returns the runs.
    ///
    /// # Panics
    /// At the first failing seed, shrunk (see [`shrink`](Self::shrink); at most
    /// [`SHRINK_VAR`] runs, 200 by default), with its reasons, its timeline, the end of its
    /// log and the line that reruns it alone. When [`KEEP_VAR`] or [`SHRINK_VAR`] is not a
    /// list of numbers or a number, naming it.
    pub fn check<F, Fut>(&self, body: F) -> Vec<Run>
    where
        F: Fn(World) -> Fut,
        Fut: Future<Output = ()>,
    {
        let simulation = self.with_env();
        simulation
            .seed_list()
            .map(|seed| {
                simulation.run(seed, &body).unwrap_or_else(|failed| {
                    let shrunk = simulation.shrink(&failed, &body);
                    panic!("{}", shrunk.report())
                })
            })
            .collect()
    }

    /// Runs `body` seed after seed until one fails, and returns that failure: for a test that
    /// a planted bug is found.
    ///
    /// # Panics
    /// When [`KEEP_VAR`] is not a list of numbers, naming it.
    pub fn find<F, Fut>(&self, body: F) -> Option<Failed>
    where
        F: Fn(World) -> Fut,
        Fut: Future<Output = ()>,
    {
        let simulation = self.with_env();
        simulation
            .seed_list()
            .find_map(|seed| simulation.run(seed, &body).err())
    }

    /// Shrinks a failure of `body` to the fewest faults that still fail it by the same oracle,
    /// within [`shrink_runs`](Self::shrink_runs) runs: the failure's seed is run again with
    /// faults left out (see [`keep_faults`](Self::keep_faults)), first all of them, then halves,
    /// quarters and so on down to single faults, keeping each removal after which the run
    /// still fails alike, until no single fault can go. "Alike": the failure's first reason,
    /// its names and numbers left out, is among the reasons of the smaller run.
    ///
    /// The [`Failed`] it returns reports its timeline ([`Failed::timeline`]) and reruns with
    /// [`KEEP_VAR`].
    ///
    /// # Panics
    /// When [`SHRINK_VAR`] is not a number, naming it.
    pub fn shrink<F, Fut>(&self, failed: &Failed, body: F) -> Failed
    where
        F: Fn(World) -> Fut,
        Fut: Future<Output = ()>,
    {
        shrink::shrink(&self.with_env(), failed, body)
    }

    /// This simulation with [`KEEP_VAR`] and [`SHRINK_VAR`] applied, when set.
    fn with_env(&self) -> Self {
        let mut simulation = self.clone();
        if let Ok(text) = std::env::var(KEEP_VAR) {
            simulation.keep = Some(shrink::parse_keep(&text).unwrap_or_else(|| {
                panic!(
                    "{KEEP_VAR}={text:?} is not a list of faults: give numbers such as 12,40, or none"
                )
            }));
        }
        if let Ok(text) = std::env::var(SHRINK_VAR) {
            simulation.shrink_runs = text.trim().parse().unwrap_or_else(|_| {
                panic!("{SHRINK_VAR}={text:?} is not a number of runs: give one such as 200")
            });
        }
        simulation
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

impl Run {
    /// The run's seed.
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The run's log (see [`World::log`]).
    #[must_use]
    pub fn log(&self) -> &str {
        &self.log
    }

    /// The virtual time the run took.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }
}

impl Failed {
    /// The failing seed.
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// What failed: the violations recorded, a panic, the time limit.
    #[must_use]
    pub fn reasons(&self) -> &[String] {
        &self.reasons
    }

    /// The run's log up to its end.
    #[must_use]
    pub fn log(&self) -> &str {
        &self.log
    }

    /// The run's timeline: the faults that took effect and the notes (see
    /// [`World::timeline`]).
    #[must_use]
    pub fn timeline(&self) -> &str {
        &self.record.timeline
    }

    /// The numbers of the faults that took effect, in the order they were drawn.
    #[must_use]
    pub fn faults(&self) -> Vec<u64> {
        self.record
            .faults
            .iter()
            .map(|(number, _)| *number)
            .collect()
    }

    /// How many steps its timeline takes: the faults that took effect.
    #[must_use]
    pub fn steps(&self) -> usize {
        self.record.faults.len()
    }

    /// The command that reruns this seed alone, with only the faults it kept when it did not
    /// keep them all, for the test running now.
    #[must_use]
    pub fn rerun(&self) -> String {
        let package = std::env::var("CARGO_PKG_NAME")
            .map(|name| format!(" -p {name}"))
            .unwrap_or_default();
        let thread = std::thread::current();
        let test = thread
            .name()
            .filter(|name| *name != "main")
            .map(|name| format!(" -- {name} --exact"))
            .unwrap_or_default();
        let keep = self
            .record
            .keep
            .as_ref()
            .map(|_| format!(" {KEEP_VAR}={}", shrink::keep_list(&self.faults())))
            .unwrap_or_default();
        format!("{SEED_VAR}={}{keep} cargo test{package}{test}", self.seed)
    }

    /// The reasons; then, when shrunk, how far, its timeline and the writes of its log, else
    /// the last 40 lines of its log; and the rerun line.
    #[must_use]
    pub fn report(&self) -> String {
        let middle = if let Some(shrunk) = &self.record.shrunk {
            shrunk.describe(self)
        } else {
            let lines: Vec<&str> = self.log.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            format!("the end of its log:\n{tail}\n")
        };
        format!(
            "simulation seed {} failed: {}\n{middle}rerun it: {}",
            self.seed,
            self.reasons.join("; "),
            self.rerun()
        )
    }
}

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seed {} failed: {}", self.seed, self.reasons.join("; "))
    }
}

impl std::error::Error for Failed {}

#[cfg(test)]
mod tests;
