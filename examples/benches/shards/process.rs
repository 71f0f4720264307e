//! One operator process of a benchmark: spawned with its flags, read through `/proc` and `/metrics`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kubeward::testing::{ControlPlane, cpu_time, free_addr, resident_bytes, scrape, terminate};

/// A running operator process; killed when dropped, stopped with SIGTERM by [`Process::stop`].
pub struct Process {
    pub id: String,
    child: Child,
    metrics: SocketAddr,
    log: PathBuf,
}

/// How to start one process: the program, a shard id, and the ring it shards (none: unsharded).
pub struct Spawn<'a> {
    pub program: &'a str,
    pub id: String,
    pub ring: Option<&'a str>,
    pub system: &'a str,
    pub apps: &'a str,
    pub env: &'a [(&'a str, &'a str)],
}

impl Spawn<'_> {
    /// Starts the process with leader election on, as `spawn_shard` in the example's tests does,
    /// with the default Lease timings (15 s Lease, renewed every 2 s).
    pub fn start(self, cp: &ControlPlane, logs: &std::path::Path) -> anyhow::Result<Process> {
        let metrics = free_addr()?;
        let log = logs.join(format!("{}.log", self.id));
        let mut command = Command::new(self.program);
        command
            .args(["--leader-elect", "--leader-election-id", "sharder"])
            .args(["--leader-election-namespace", self.system])
            .args(["--watch-namespaces", self.apps])
            .args(["--metrics-bind-address", &metrics.to_string()])
            .args(["--health-probe-bind-address", "0"])
            .env("KUBECONFIG", cp.kubeconfig())
            .env("POD_NAME", &self.id)
            // The leader-election identity starts with the host name.
            .env("HOSTNAME", &self.id)
            .env("RUST_LOG", "warn")
            .envs(self.env.iter().copied())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?);
        if let Some(ring) = self.ring {
            command.args(["--shard-ring", ring, "--shard-id", &self.id]);
        }
        Ok(Process {
            id: self.id,
            child: command.spawn()?,
            metrics,
            log,
        })
    }
}

impl Process {
    /// Its `/metrics` page.
    pub async fn metrics(&self) -> anyhow::Result<String> {
        Ok(scrape(self.metrics).await?)
    }

    /// Resident bytes (`VmRSS`).
    pub fn rss(&self) -> anyhow::Result<u64> {
        Ok(resident_bytes(self.child.id())?)
    }

    /// CPU time used so far (user + system).
    pub fn cpu(&self) -> anyhow::Result<Duration> {
        Ok(cpu_time(self.child.id())?)
    }

    /// Its log, for an error message.
    pub fn log(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        format!(
            "{}:\n{}",
            self.id,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )
    }

    /// Sends SIGTERM and waits until it exited (a shard releases its Lease on the way).
    pub async fn stop(mut self) -> anyhow::Result<()> {
        terminate(&mut self.child, Duration::from_secs(60)).await?;
        Ok(())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sum of the samples of `family` on `page` whose labels contain every one of `having`.
pub fn sum(page: &str, family: &str, having: &[&str]) -> f64 {
    page.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.strip_prefix(family)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter(|l| having.iter().all(|h| l.contains(h)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
