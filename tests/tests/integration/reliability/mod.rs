//! Faults on the real control plane, run in sequence by one test that prints a summary table.
//!
//! After every fault the suite checks that the cache equals the server, that every object was
//! reconciled at its last change, that no key was reconciled twice at once, and that the
//! operator still runs and answers `/readyz`. One test runs the faults one after another on a
//! private control plane, so the faults do not disturb each other or other tests, and the table
//! it prints (`-- --nocapture`; also written to `target/tmp/reliability-summary-PROFILE.md`)
//! covers one run. `KUBEWARD_RELIABILITY=full` selects the full profile (see `Profile`).

mod input;
mod leader;
mod load;
mod network;
mod reconciler;
mod restarts;
mod shutdown;
mod startup;
mod summary;
mod undecodable;
mod witness;
mod witnessed;
mod writer;

use std::future::Future;

use anyhow::Context as _;
use kubeward::manager::OnLeadershipLoss;
use kubeward::testing::ControlPlane;

use self::summary::{Row, Summary};

/// How hard the suite pushes: the CI profile by default, the full one with
/// `KUBEWARD_RELIABILITY=full`.
#[derive(Clone, Copy, Debug)]
struct Profile {
    name: &'static str,
    restarts: usize,
    load: load::Load,
}

impl Profile {
    fn from_env() -> Self {
        if std::env::var("KUBEWARD_RELIABILITY").is_ok_and(|v| v == "full") {
            Self {
                name: "full",
                restarts: 10,
                load: load::Load {
                    objects: 10_000,
                    updates_per_second: 100,
                    seconds: 60,
                    concurrency: 8,
                    memory_bound: true,
                },
            }
        } else {
            Self {
                name: "ci",
                restarts: 3,
                load: load::Load {
                    objects: 1_000,
                    updates_per_second: 100,
                    seconds: 15,
                    concurrency: 8,
                    memory_bound: false,
                },
            }
        }
    }
}

/// The profile and the rows of one run of the suite.
#[derive(Debug)]
struct Suite {
    profile: Profile,
    summary: Summary,
}

impl Suite {
    /// Runs `family`, adds its rows; on failure prints the table so far and names the family.
    async fn run<F>(&mut self, family: &str, rows: F) -> anyhow::Result<()>
    where
        F: Future<Output = anyhow::Result<Vec<Row>>>,
    {
        match rows.await {
            Ok(rows) => {
                for row in rows {
                    self.summary.add(row);
                }
                Ok(())
            }
            Err(e) => {
                eprintln!("{}", self.summary.table(self.profile.name));
                Err(e).with_context(|| format!("fault family {family}"))
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_loses_no_update_and_the_summary_table_is_printed() -> anyhow::Result<()> {
    if kubeward::testing::skip_on_existing_cluster(
        "a private control plane whose kube-apiserver it kills and restarts",
    ) {
        return Ok(());
    }
    let profile = Profile::from_env();
    let mut cp = ControlPlane::start().await?;
    let mut suite = Suite {
        profile,
        summary: Summary::default(),
    };
    suite
        .run("start-up", startup::apiserver_unreachable(&cp))
        .await?;
    suite.run("bad input", input::unusual_objects(&cp)).await?;
    suite
        .run("undecodable", undecodable::custom_resources(&cp))
        .await?;
    suite.run("reconciler", reconciler::faults(&cp)).await?;
    suite.run("stall", network::stalled_connection(&cp)).await?;
    suite
        .run("compaction", network::compacted_history(&cp))
        .await?;
    let exit = leader::faults(&cp, OnLeadershipLoss::Exit);
    suite.run("leader", exit).await?;
    let standby = leader::faults(&cp, OnLeadershipLoss::Standby);
    suite.run("leader on standby", standby).await?;
    let restarts = restarts::apiserver_killed_and_restarted(&mut cp, profile.restarts);
    suite.run("apiserver restarts", restarts).await?;
    // Boxed: a manager and 100 reconciles in one future are over clippy's large-future limit.
    let shutdown = Box::pin(shutdown::with_reconciles_in_flight(&cp));
    suite.run("shutdown", shutdown).await?;
    suite
        .run("load", load::sustained(&cp, profile.load))
        .await?;
    let table = suite.summary.table(profile.name);
    #[allow(clippy::print_stdout)] // the table is what this test reports
    {
        println!("{table}");
    }
    // Also kept as a file, since a passing test's output is hidden unless run with --nocapture.
    let kept = format!(
        "{}/reliability-summary-{}.md",
        env!("CARGO_TARGET_TMPDIR"),
        profile.name
    );
    std::fs::write(&kept, table).with_context(|| format!("writing {kept}"))?;
    Ok(())
}
