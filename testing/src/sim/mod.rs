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
//! Not done yet: shrinking a failing seed to a minimal timeline, pauses of a leader past its
//! Lease, crashes and restarts with an empty cache, unreachable windows, compactions.

mod faults;
mod network;
mod oracle;
mod starting_seed;
mod world;

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

/// Runs a test body once per seed on a paused clock against a faulty fake API server.
#[derive(Clone, Debug)]
#[must_use]
pub struct Simulation {
    faults: Faults,
    seeds: Range<u64>,
    time_limit: Duration,
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
}

impl Default for Simulation {
    fn default() -> Self {
        Self::new()
    }
}

impl Simulation {
    /// Seeds `0..50` with the default [`Faults`] and an hour of virtual time per run.
    pub fn new() -> Self {
        Self {
            faults: Faults::default(),
            seeds: 0..50,
            time_limit: Duration::from_secs(3600),
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
        let world = runtime.block_on(async { World::new(seed, self.faults.clone()) });
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
            Err(Failed { seed, reasons, log })
        }
    }

    /// Runs `body` for each seed and returns the runs.
    ///
    /// # Panics
    /// At the first failing seed, with its reasons, the end of its log and the line that
    /// reruns it alone.
    pub fn check<F, Fut>(&self, body: F) -> Vec<Run>
    where
        F: Fn(World) -> Fut,
        Fut: Future<Output = ()>,
    {
        self.seed_list()
            .map(|seed| {
                self.run(seed, &body)
                    .unwrap_or_else(|failed| panic!("{}", failed.report()))
            })
            .collect()
    }

    /// Runs `body` seed after seed until one fails, and returns that failure: for a test that
    /// a planted bug is found.
    pub fn find<F, Fut>(&self, body: F) -> Option<Failed>
    where
        F: Fn(World) -> Fut,
        Fut: Future<Output = ()>,
    {
        self.seed_list()
            .find_map(|seed| self.run(seed, &body).err())
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

    /// The command that reruns this seed alone, for the test running now.
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
        format!("{SEED_VAR}={} cargo test{package}{test}", self.seed)
    }

    /// The reasons, the last 40 lines of the log and the rerun line.
    #[must_use]
    pub fn report(&self) -> String {
        let lines: Vec<&str> = self.log.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        format!(
            "simulation seed {} failed: {}\nthe end of its log:\n{tail}\nrerun it: {}",
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
