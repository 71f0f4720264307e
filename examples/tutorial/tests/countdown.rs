// ANCHOR: file
//! Runs the operator binary against a local control plane and watches a countdown finish.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use countdown::{Countdown, CountdownSpec, Phase};
use kube::Api;
use kube::api::PostParams;
use kubeward::testing::{ControlPlane, free_addr, install_crd, scrape, wait_for};

// ANCHOR: test
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_countdown_is_done_once_its_seconds_have_passed() -> anyhow::Result<()> {
    // etcd and kube-apiserver on loopback, the CRD installed, a namespace of our own.
    let cp = ControlPlane::shared().await?;
    install_crd::<Countdown>(cp.client()).await?;
    let ns = cp.create_namespace("countdown").await?;

    // The operator, exactly as `cargo run` builds it, watching that namespace.
    let metrics = free_addr()?;
    let operator = Command::new(env!("CARGO_BIN_EXE_countdown"))
        .args(["--namespace", &ns, "--health-probe-bind-address", "0"])
        .args(["--metrics-bind-address", &metrics.to_string()])
        .env("KUBECONFIG", cp.kubeconfig())
        .stdout(Stdio::null())
        .spawn()?;
    let _operator = KillOnDrop(operator);

    let countdowns: Api<Countdown> = Api::namespaced(cp.client(), &ns);
    let launch = Countdown::new("launch", CountdownSpec { seconds: 2 });
    let created = tokio::time::Instant::now();
    countdowns.create(&PostParams::default(), &launch).await?;

    let done = || async {
        let status = countdowns.get("launch").await.ok()?.status?;
        (status.phase == Phase::Done).then_some(())
    };
    wait_for(Duration::from_secs(30), "the countdown to be Done", done).await?;
    assert!(
        created.elapsed() >= Duration::from_secs(2),
        "Done after {:?}, before the countdown's 2 seconds",
        created.elapsed()
    );

    // The reconcile that found time left asked to be called again: a `requeue_after` result.
    let requeued =
        r#"controller_runtime_reconcile_total{controller="countdown",result="requeue_after"}"#;
    let scraped = scrape(metrics).await?;
    let count = scraped
        .lines()
        .find_map(|line| line.strip_prefix(requeued))
        .and_then(|value| value.trim().parse::<f64>().ok());
    assert!(
        count >= Some(1.0),
        "expected {requeued} >= 1 in:\n{scraped}"
    );
    Ok(())
}
// ANCHOR_END: test

/// Stops the operator when the test ends, however it ends.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
// ANCHOR_END: file
