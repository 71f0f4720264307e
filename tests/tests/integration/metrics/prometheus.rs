//! A real Prometheus server on loopback, scraping one target every second; killed on drop.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use kubeward::testing::{free_addr, get, wait_for};

/// A running `prometheus` with its own config and storage in a temp dir.
pub(super) struct Prometheus {
    addr: SocketAddr,
    _child: tokio::process::Child,
    dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts Prometheus scraping `target`'s `/metrics` every second, as job `kubeward`, and waits
    /// until it is ready.
    pub(super) async fn start(target: SocketAddr) -> anyhow::Result<Self> {
        Self::start_with_jobs(&format!(
            "  - job_name: kubeward\n    static_configs:\n      - targets: ['{target}']\n"
        ))
        .await
    }

    /// Starts Prometheus with `jobs` (YAML items of `scrape_configs`, indented by two spaces),
    /// scraping every second, and waits until it is ready.
    pub(super) async fn start_with_jobs(jobs: &str) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n{jobs}"
            ),
        )?;
        let addr = free_addr()?;
        let log = std::fs::File::create(dir.path().join("prometheus.log"))?;
        let child = tokio::process::Command::new(tool("prometheus")?)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()?;
        let prometheus = Self {
            addr,
            _child: child,
            dir,
        };
        wait_for(
            Duration::from_secs(60),
            "Prometheus to be ready",
            || async {
                get(addr, "/-/ready")
                    .await
                    .ok()?
                    .status()
                    .is_success()
                    .then_some(())
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e}; log:\n{}", prometheus.log()))?;
        Ok(prometheus)
    }

    /// What Prometheus logged so far.
    pub(super) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// The instant vector `promql` evaluates to now, through `/api/v1/query`: each series'
    /// labels and value.
    pub(super) async fn query(
        &self,
        promql: &str,
    ) -> anyhow::Result<Vec<(serde_json::Value, f64)>> {
        let response = get(
            self.addr,
            &format!("/api/v1/query?query={}", encode(promql)),
        )
        .await?;
        let (status, body) = (response.status(), response.into_body());
        anyhow::ensure!(status == 200, "query {promql} answered {status}: {body}");
        let answer: serde_json::Value = serde_json::from_str(&body)?;
        anyhow::ensure!(answer["status"] == "success", "query {promql}: {body}");
        answer["data"]["result"]
            .as_array()
            .ok_or_else(|| anyhow::anyhow!("no result vector in {body}"))?
            .iter()
            .map(|series| {
                let value = series["value"][1]
                    .as_str()
                    .ok_or_else(|| anyhow::anyhow!("no value in {series}"))?
                    .parse()?;
                Ok((series["metric"].clone(), value))
            })
            .collect()
    }
}

/// Percent-encodes everything but unreserved characters, for a query string.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// Finds `program` where `scripts/setup` installs it (see `kubeward::testing::Binaries::tool`).
pub(super) fn tool(program: &str) -> anyhow::Result<PathBuf> {
    Ok(kubeward::testing::Binaries::tool(program)?)
}
