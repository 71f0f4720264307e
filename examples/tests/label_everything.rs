//! The `label_everything` example as a child process: an unknown kind stops it with an error
//! naming the kind and a non-zero exit status.

use std::process::Command;

use kubeward::testing::ControlPlane;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_kind_stops_the_example_with_an_error_naming_it() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let kind = "Nothing.v1.nowhere.kubeward.dev";
    let output = Command::new(env!("CARGO_BIN_EXE_label_everything"))
        .args(["--kind", kind, "--metrics-bind-address", "0"])
        .args(["--health-probe-bind-address", "0"])
        .env("KUBECONFIG", cp.kubeconfig())
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "an unknown kind must stop the example with status 1; stderr: {stderr}"
    );
    assert!(
        stderr.contains(&format!("the API server serves no kind {kind:?}")),
        "the error names the kind: {stderr}"
    );
    Ok(())
}
