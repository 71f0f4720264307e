//! Shrinks a failing run to the fewest faults that still fail it the same way.
//!
//! Every fault a run draws has a number (see [`super::schedule`]); a run can keep only some of
//! them and still draw the rest, so that the seed's random stream, and with it the workload,
//! stays as it was until a left-out fault changes what the code under test does. The shrinker
//! reruns the failing seed with fewer and fewer faults kept, delta-debugging style: none at all
//! first (a bug that needs no fault, like a counter bumped at every reconcile, ends there),
//! then every fault of one kind (all delivery delays, all latency, all broken watches, all
//! outages, all failed requests), then it leaves out halves of the faults left, then quarters, down to single faults, and
//! keeps every removal after which the run still fails alike, until no single fault can go
//! (or the run budget is spent). Numbers are the only handle it needs: once a removal changes
//! the run, a number may name another fault than before, but a seed and a set of numbers still
//! replay exactly, which is all the rerun line needs.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::future::Future;

use super::schedule::Kind;
use super::{Failed, Simulation, World};

/// How a failure was shrunk.
#[derive(Clone, Debug)]
pub(crate) struct Shrunk {
    /// Faults in the failure it began with.
    from: usize,
    /// Runs it took.
    runs: u32,
    /// Whether it stopped at its run budget, before every single fault was tried.
    budget_spent: bool,
}

impl Shrunk {
    /// A header and the timeline of `failed`, for its report.
    pub(crate) fn describe(&self, failed: &Failed) -> String {
        let mut text = format!(
            "shrunk from {} faults to {} in {} runs",
            self.from,
            failed.record.faults.len(),
            self.runs
        );
        if self.budget_spent {
            text.push_str(" (the run budget ran out: some may still go)");
        }
        let writes: String = failed
            .log
            .lines()
            .filter(|line| {
                [" POST ", " PUT ", " PATCH ", " DELETE "]
                    .iter()
                    .any(|method| line.contains(method))
            })
            .flat_map(|line| [line, "\n"])
            .collect();
        // Writing to a String cannot fail.
        let _ = write!(
            text,
            "; its timeline, faults and notes:\n{}the writes of its log:\n{writes}",
            failed.record.timeline
        );
        text
    }
}

/// Shrinks `failed`, a failure of `body` under `simulation` (see [`Simulation::shrink`]).
pub(crate) fn shrink<F, Fut>(simulation: &Simulation, failed: &Failed, body: F) -> Failed
where
    F: Fn(World) -> Fut,
    Fut: Future<Output = ()>,
{
    let target = failed.reasons.first().map(|reason| oracle(reason));
    let budget = simulation.shrink_runs;
    let mut runs = 0;
    let mut best = failed.clone();
    let attempt = |keep: BTreeSet<u64>, runs: &mut u32| -> Option<Failed> {
        if *runs >= budget {
            return None;
        }
        *runs += 1;
        let failure = simulation
            .clone()
            .keep_faults(keep)
            .run(failed.seed, &body)
            .err()?;
        let alike = failure
            .reasons
            .iter()
            .any(|reason| Some(oracle(reason)) == target);
        alike.then_some(failure)
    };
    if let Some(none) = attempt(BTreeSet::new(), &mut runs) {
        best = none;
    }
    // Whole kinds next: a race often needs one failure and none of the hundreds of delays.
    for kind in [
        Kind::Delay,
        Kind::Latency,
        Kind::Break,
        Kind::Outage,
        Kind::Failure,
    ] {
        if best.record.faults.iter().any(|(_, of)| *of == kind) {
            let keep = best
                .record
                .faults
                .iter()
                .filter(|(_, of)| *of != kind)
                .map(|(number, _)| *number)
                .collect();
            if let Some(smaller) = attempt(keep, &mut runs) {
                best = smaller;
            }
        }
    }
    let mut chunk = best.record.faults.len().div_ceil(2).max(1);
    while !best.record.faults.is_empty() && runs < budget {
        let mut removed = false;
        let mut start = 0;
        while start < best.record.faults.len() && runs < budget {
            let end = (start + chunk).min(best.record.faults.len());
            let keep: BTreeSet<u64> = best.record.faults[..start]
                .iter()
                .chain(&best.record.faults[end..])
                .map(|(number, _)| *number)
                .collect();
            match attempt(keep, &mut runs) {
                Some(smaller) => {
                    best = smaller;
                    removed = true;
                }
                None => start = end,
            }
        }
        if chunk == 1 && !removed {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    let done = best.record.faults.is_empty() || runs < budget;
    best.record.shrunk = Some(Shrunk {
        from: failed.record.faults.len(),
        runs,
        budget_spent: !done,
    });
    best
}

/// The oracle a reason names: its words without names and numbers (`source-3`, `30s`,
/// `Some({"step": "5"})`), so that the same violation on another object counts as the same.
pub(crate) fn oracle(reason: &str) -> String {
    reason
        .split_whitespace()
        .filter(|word| {
            word.chars()
                .all(|c| c.is_alphabetic() || ":;,.()".contains(c))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The faults kept, as [`KEEP_VAR`](super::KEEP_VAR) reads them: `3,17,42`, or `none`.
pub(crate) fn keep_list(faults: &[u64]) -> String {
    if faults.is_empty() {
        return "none".to_owned();
    }
    faults
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Reads a list of faults to keep: numbers separated by commas, or `none` (or nothing).
pub(crate) fn parse_keep(text: &str) -> Option<BTreeSet<u64>> {
    let text = text.trim();
    if text.is_empty() || text == "none" {
        return Some(BTreeSet::new());
    }
    text.split(',')
        .map(|number| number.trim().parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Api;
    use kube::api::ListParams;

    use super::super::Faults;
    use super::*;

    /// Lists ConfigMaps twelve times, one request after another, half of which fail; fails
    /// when the 4th and the 9th list both failed, whatever else did.
    async fn two_failures(world: World) {
        world.fake().register::<ConfigMap>();
        let api: Api<ConfigMap> = Api::namespaced(world.client("lister"), "ns");
        let mut failed = Vec::new();
        for _ in 0..12 {
            failed.push(api.list(&ListParams::default()).await.is_err());
        }
        if failed[3] && failed[8] {
            world.violation("the 4th and the 9th list failed");
        }
    }

    fn half_fail() -> Simulation {
        Simulation::new().faults(Faults::none().failure_rate(0.5))
    }

    #[test]
    fn a_failure_that_needs_two_faults_shrinks_to_exactly_those_two() {
        let simulation = half_fail().seeds(0..100);
        let failed = simulation
            .find(two_failures)
            .expect("a quarter of the seeds fail");
        assert!(failed.steps() > 2, "{}", failed.timeline());
        let shrunk = simulation.shrink(&failed, two_failures);
        assert_eq!(shrunk.seed(), failed.seed());
        assert_eq!(shrunk.reasons(), ["the 4th and the 9th list failed"]);
        assert_eq!(shrunk.steps(), 2, "{}", shrunk.report());
        let faults: Vec<&str> = shrunk
            .timeline()
            .lines()
            .filter(|line| line.contains("fault "))
            .collect();
        assert!(
            faults[0].contains("lister #4 GET") && faults[1].contains("lister #9 GET"),
            "the faults left are the 4th and the 9th list's: {faults:?}"
        );
        assert!(
            shrunk.report().contains("shrunk from"),
            "{}",
            shrunk.report()
        );
    }

    #[test]
    fn the_shrunk_rerun_line_replays_the_failure() {
        let simulation = half_fail().seeds(0..100);
        let failed = simulation.find(two_failures).expect("a seed fails");
        let shrunk = simulation.shrink(&failed, two_failures);
        let rerun = shrunk.rerun();
        let keep = rerun
            .split_whitespace()
            .find_map(|word| word.strip_prefix("KUBEWARD_SIM_KEEP="))
            .and_then(parse_keep)
            .expect("the rerun line keeps a list of faults");
        assert!(rerun.starts_with(&format!("KUBEWARD_SIM_SEED={} ", failed.seed())));
        let replayed = half_fail()
            .keep_faults(keep)
            .run(shrunk.seed(), two_failures)
            .expect_err("the rerun fails");
        assert_eq!(replayed.reasons(), shrunk.reasons());
        assert!(
            replayed.log() == shrunk.log(),
            "the rerun's log is the shrunk run's"
        );
        assert!(replayed.timeline() == shrunk.timeline());
    }

    #[test]
    fn a_passing_body_never_shrinks() {
        let calls = Arc::new(AtomicU32::new(0));
        let counting = |fail: bool| {
            let calls = Arc::clone(&calls);
            move |world: World| {
                calls.fetch_add(1, Ordering::SeqCst);
                async move { two_failures_or(world, fail).await }
            }
        };
        let runs = half_fail().seeds(0..5).check(counting(false));
        assert_eq!(runs.len(), 5);
        assert_eq!(
            calls.load(Ordering::SeqCst),
            5,
            "one run per seed, no shrinking"
        );
        // A failure whose body now passes: nothing smaller fails, so it stays as it was.
        let failed = half_fail().find(two_failures).expect("a seed fails");
        calls.store(0, Ordering::SeqCst);
        let shrunk = half_fail().shrink(&failed, counting(false));
        assert_eq!(shrunk.faults(), failed.faults());
        assert!(calls.load(Ordering::SeqCst) > 0);
    }

    async fn two_failures_or(world: World, fail: bool) {
        if fail {
            two_failures(world).await;
        }
    }

    #[test]
    fn a_failure_that_needs_no_fault_shrinks_to_none_in_one_run() {
        let body = |world: World| async move {
            world.fake().register::<ConfigMap>();
            let api: Api<ConfigMap> = Api::namespaced(world.client("lister"), "ns");
            for _ in 0..12 {
                let _ = api.list(&ListParams::default()).await;
            }
            world.violation("always");
        };
        let failed = half_fail().run(1, body).expect_err("it always fails");
        assert!(failed.steps() > 0);
        let shrunk = half_fail().shrink(&failed, body);
        assert_eq!(shrunk.steps(), 0);
        assert!(shrunk.report().contains("in 1 runs"), "{}", shrunk.report());
        assert!(shrunk.rerun().contains("KUBEWARD_SIM_KEEP=none "));
    }

    #[test]
    fn shrinking_stops_at_its_run_budget() {
        let simulation = half_fail().seeds(0..100).shrink_runs(3);
        let failed = simulation.find(two_failures).expect("a seed fails");
        let shrunk = simulation.shrink(&failed, two_failures);
        assert!(
            shrunk
                .report()
                .contains("in 3 runs (the run budget ran out")
        );
    }

    #[test]
    fn an_oracle_leaves_out_names_and_numbers() {
        assert_eq!(
            oracle("no fixed point 300s after faults stopped: source-3-q8sl2 is an orphan"),
            oracle("no fixed point 300s after faults stopped: source-1-x7rt is an orphan")
        );
        assert_ne!(
            oracle("no fixed point 300s after faults stopped: source-3 has no copy"),
            oracle("no fixed point 300s after faults stopped: source-3 has 2 copies")
        );
        assert_eq!(parse_keep(&keep_list(&[3, 17])), Some([3, 17].into()));
        assert_eq!(parse_keep("none"), Some(BTreeSet::new()));
        assert_eq!(parse_keep("3,x"), None);
    }
}
