//! A ring of shard processes scaled 3 → 5 → 2 while a writer keeps changing every object: objects
//! move through drain, no two shards ever reconcile one object at once, no update is lost, and
//! the `shards` subcommand shows the ring.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kubeward::sharding::{drain_label, shard_label};
use kubeward::testing::{ControlPlane, free_addr, install_definition, scrape, wait_for};
use kubeward_examples::by_hand::generated_name;
use kubeward_examples::configmap_generator::{ConfigMapGenerator, ConfigMapGeneratorSpec};
use tokio_util::sync::CancellationToken;

const RING: &str = "configmap-generator";
const GENERATORS: usize = 200;
const SETTLE: Duration = Duration::from_secs(30);

/// A shard process, killed if the test fails before it exits on its own.
struct ShardProcess {
    id: &'static str,
    child: Child,
    metrics: SocketAddr,
    log: PathBuf,
}

impl Drop for ShardProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The environment every run of the instrumented shard needs: the control plane and the shared
/// marker folder.
fn marked_shard(cp: &ControlPlane, markers: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_marked_shard"));
    command
        .env("KUBECONFIG", cp.kubeconfig())
        .env("KUBEWARD_MARKERS", markers)
        .env("RUST_LOG", "info");
    command
}

/// Starts shard `id` of the ring, watching `apps`, with its shard and leader Leases in `system`.
fn spawn_shard(
    cp: &ControlPlane,
    (system, apps): (&str, &str),
    id: &'static str,
    markers: &Path,
) -> anyhow::Result<ShardProcess> {
    let metrics = free_addr()?;
    let log = markers.join(format!("{id}.log"));
    let child = marked_shard(cp, markers)
        .env("KUBEWARD_SHARD_ID", id)
        .args(["--leader-elect", "--leader-election-id", "sharder"])
        .args(["--leader-election-namespace", system])
        .args(["--leader-election-lease-duration", "4s"])
        .args(["--leader-election-renew-deadline", "3s"])
        .args(["--leader-election-retry-period", "500ms"])
        .args(["--shard-ring", RING, "--max-concurrent-reconciles", "4"])
        .args(["--watch-namespaces", apps])
        .args(["--metrics-bind-address", &metrics.to_string()])
        .args(["--health-probe-bind-address", "0"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .spawn()?;
    Ok(ShardProcess {
        id,
        child,
        metrics,
        log,
    })
}

/// Sends SIGTERM and waits until the process exits cleanly.
async fn terminate(shard: &mut ShardProcess) -> anyhow::Result<()> {
    let exited = kubeward::testing::terminate(&mut shard.child, SETTLE).await?;
    anyhow::ensure!(
        exited.success(),
        "{} exited with {exited}:\n{}",
        shard.id,
        std::fs::read_to_string(&shard.log).unwrap_or_default()
    );
    Ok(())
}

/// Every shard's log, for a failure message.
fn logs(shards: &[ShardProcess]) -> String {
    let mut all = String::new();
    for shard in shards {
        all.push_str("--- ");
        all.push_str(shard.id);
        all.push_str(":\n");
        all.push_str(&std::fs::read_to_string(&shard.log).unwrap_or_default());
    }
    all
}

/// Each generator's shard label, drain label and whether its ConfigMap holds its spec.
#[derive(Debug, Default)]
struct Placement {
    shard: Option<String>,
    draining: bool,
    produced: bool,
}

async fn placements(
    generators: &Api<ConfigMapGenerator>,
    configmaps: &Api<ConfigMap>,
) -> anyhow::Result<BTreeMap<String, Placement>> {
    let made: BTreeMap<String, String> = configmaps
        .list(&ListParams::default())
        .await?
        .into_iter()
        .filter_map(|cm| Some((cm.metadata.name?, cm.data?.remove("content")?)))
        .collect();
    let (shard, drain) = (shard_label(RING), drain_label(RING));
    Ok(generators
        .list(&ListParams::default())
        .await?
        .into_iter()
        .map(|g| {
            let labels = g.metadata.labels.clone().unwrap_or_default();
            let placement = Placement {
                shard: labels.get(&shard).cloned(),
                draining: labels.contains_key(&drain),
                produced: made.get(&generated_name(&g)) == Some(&g.spec.content),
            };
            (g.metadata.name.unwrap_or_default(), placement)
        })
        .collect())
}

/// `Some` with the placements once every generator is on one of `shards`, none is draining,
/// and `also` holds.
async fn all_on(
    generators: &Api<ConfigMapGenerator>,
    configmaps: &Api<ConfigMap>,
    shards: &[&str],
    also: impl Fn(&BTreeMap<String, Placement>) -> bool,
) -> Option<BTreeMap<String, Placement>> {
    let placed = placements(generators, configmaps).await.ok()?;
    let settled = placed.len() == GENERATORS
        && placed
            .values()
            .all(|p| !p.draining && p.shard.as_deref().is_some_and(|s| shards.contains(&s)));
    (settled && also(&placed)).then_some(placed)
}

/// The names of the files in the violations folder.
fn violations(markers: &Path) -> Vec<String> {
    std::fs::read_dir(markers.join("violations"))
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The sum of `kubeward_sharder_drains_total` over the shards' `/metrics` (only the leader's
/// sharder counts).
async fn drains(shards: &[ShardProcess]) -> f64 {
    let mut total = 0.0;
    for shard in shards {
        let page = scrape(shard.metrics).await.unwrap_or_default();
        total += page
            .lines()
            .filter(|l| l.starts_with("kubeward_sharder_drains_total"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>();
    }
    total
}

/// Sets every generator's content to `v1`, then `v2`, ..., counting the writes in `written`,
/// until `stop` is cancelled.
async fn write_until(
    api: Api<ConfigMapGenerator>,
    stop: CancellationToken,
    written: Arc<AtomicUsize>,
) {
    for round in 1.. {
        for i in 0..GENERATORS {
            if stop.is_cancelled() {
                return;
            }
            let patch = serde_json::json!({ "spec": { "content": format!("v{round}") } });
            let params = PatchParams::default();
            let name = format!("g-{i}");
            if api
                .patch(&name, &params, &Patch::Merge(&patch))
                .await
                .is_ok()
            {
                written.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Runs the `shards` subcommand: `live` are ready and hold every generator between them, the
/// first three shards are dead.
fn check_ring_view(
    cp: &ControlPlane,
    (system, apps): (&str, &str),
    markers: &Path,
    live: &[&str],
) -> anyhow::Result<()> {
    let view = marked_shard(cp, markers)
        .args([
            "--leader-election-namespace",
            system,
            "--watch-namespaces",
            apps,
        ])
        .arg("shards")
        .output()?;
    let table = String::from_utf8_lossy(&view.stdout);
    anyhow::ensure!(
        view.status.success(),
        "shards: {table}{}",
        String::from_utf8_lossy(&view.stderr)
    );
    eprintln!("{table}");
    // RING SHARD STATE HOLDER RENEWED CONFIGMAPGENERATORS CONFIGMAPS
    let row = |id: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(id))
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let mut held = 0;
    for id in live {
        let row = row(id);
        assert_eq!(
            row.get(2).map(String::as_str),
            Some("ready"),
            "{id} in:\n{table}"
        );
        held += row
            .get(5)
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
    }
    assert_eq!(held, GENERATORS, "the live shards' generators in:\n{table}");
    for id in ["shard-a", "shard-b", "shard-c"] {
        assert_eq!(
            row(id).get(2).map(String::as_str),
            Some("dead"),
            "{id} in:\n{table}"
        );
    }
    Ok(())
}

/// Where the test's ring lives: its Leases, its generators and the shared marker folder.
struct Ring<'a> {
    cp: &'a ControlPlane,
    system: String,
    apps: String,
    markers: &'a Path,
    generators: Api<ConfigMapGenerator>,
    configmaps: Api<ConfigMap>,
}

impl Ring<'_> {
    fn spawn(&self, id: &'static str) -> anyhow::Result<ShardProcess> {
        spawn_shard(self.cp, (&self.system, &self.apps), id, self.markers)
    }

    /// Waits until every generator is on one of `shards`, none is draining, and `also` holds;
    /// on a timeout, the error carries the logs of `running`.
    async fn settled(
        &self,
        what: &str,
        shards: &[&str],
        running: &[ShardProcess],
        also: impl Fn(&BTreeMap<String, Placement>) -> bool,
    ) -> anyhow::Result<BTreeMap<String, Placement>> {
        wait_for(Duration::from_secs(60), what, || {
            all_on(&self.generators, &self.configmaps, shards, &also)
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}\n{}", logs(running)))
    }
}

/// Creates generators `g-0`..`g-{GENERATORS - 1}` with content `v0`.
async fn create_generators(api: &Api<ConfigMapGenerator>) -> anyhow::Result<()> {
    for i in 0..GENERATORS {
        let spec = ConfigMapGeneratorSpec {
            content: "v0".into(),
        };
        let generator = ConfigMapGenerator::new(&format!("g-{i}"), spec);
        api.create(&PostParams::default(), &generator).await?;
    }
    Ok(())
}

fn all_produced(placed: &BTreeMap<String, Placement>) -> bool {
    placed.values().all(|p| p.produced)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_three_shard_processes_to_five_and_to_two_under_load_moves_objects_through_drain_without_overlap_or_lost_updates()
-> anyhow::Result<()> {
    let started = tokio::time::Instant::now();
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let markers = tempfile::tempdir()?;
    let apps = cp.create_namespace("scale-apps").await?;
    let ring = Ring {
        cp,
        system: cp.create_namespace("scale-system").await?,
        markers: markers.path(),
        generators: Api::namespaced(cp.client(), &apps),
        configmaps: Api::namespaced(cp.client(), &apps),
        apps,
    };
    create_generators(&ring.generators).await?;
    let first = ["shard-a", "shard-b", "shard-c"];
    let mut shards = Vec::new();
    for id in first {
        shards.push(ring.spawn(id)?);
    }
    let what = "every generator produced on one of three shards";
    let placed = ring.settled(what, &first, &shards, all_produced).await?;

    // The writer: every generator's spec, over and over, until told to stop.
    let stop = CancellationToken::new();
    let written = Arc::new(AtomicUsize::new(0));
    let writer = tokio::spawn(write_until(
        ring.generators.clone(),
        stop.clone(),
        Arc::clone(&written),
    ));
    // Updates flow before each step.
    let flowing = |since: usize| {
        let written = Arc::clone(&written);
        wait_for(SETTLE, "the writer's next updates", move || {
            let now = written.load(Ordering::Relaxed);
            async move { (now >= since + 10).then_some(now) }
        })
    };
    let before_growth = flowing(0).await?;

    // 3 → 5: some generators move to the new shards, each through a drain.
    let new = ["shard-d", "shard-e"];
    for id in new {
        shards.push(ring.spawn(id)?);
    }
    let five = ["shard-a", "shard-b", "shard-c", "shard-d", "shard-e"];
    let what = "every generator on one of five shards, some on the new ones, none draining";
    let on_five = ring
        .settled(what, &five, &shards, |p| {
            new.iter()
                .all(|new| p.values().any(|p| p.shard.as_deref() == Some(*new)))
        })
        .await?;
    let moved = placed
        .iter()
        .filter(|(name, p)| on_five.get(*name).map(|q| &q.shard) != Some(&p.shard))
        .count();
    let drained = drains(&shards).await;
    assert!(
        drained >= 1.0,
        "the leader's sharder counted {drained} drains, though {moved} generators moved"
    );
    let before_shrink = flowing(before_growth).await?;

    // 5 → 2: the first three stop gracefully; their generators go to the last two.
    for mut shard in shards.drain(..3).collect::<Vec<_>>() {
        terminate(&mut shard).await?;
    }
    let what = "every generator on one of the last two shards";
    ring.settled(what, &new, &shards, |_| true).await?;
    let before_stop = flowing(before_shrink).await?;

    // The writer stops; every generator's ConfigMap then holds its last spec.
    stop.cancel();
    writer.await?;
    let written = written.load(Ordering::Relaxed);
    let what = "every generator's ConfigMap holding its last spec";
    ring.settled(what, &new, &shards, all_produced).await?;
    let overlaps = violations(ring.markers);
    assert!(
        overlaps.is_empty(),
        "generators reconciled by two shards at once: {overlaps:?}\n{}",
        logs(&shards)
    );
    assert!(written >= before_stop, "{written} writes");

    // The ring view: the two live shards hold every generator, the stopped three are dead.
    check_ring_view(cp, (&ring.system, &ring.apps), ring.markers, &new)?;

    for shard in &mut shards {
        terminate(shard).await?;
    }
    eprintln!(
        "3 → 5 → 2 shards: {moved} of {GENERATORS} generators moved on 3 → 5 ({drained} drains: generators and their \
         ConfigMaps), \
         {written} spec writes ({before_growth} before 3 → 5, {before_shrink} before 5 → 2, \
         {before_stop} before the writer stopped), {:?} in all",
        started.elapsed()
    );
    Ok(())
}
