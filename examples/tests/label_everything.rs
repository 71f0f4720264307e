//! The `label_everything` example as a child process: it labels the objects of the kind named
//! on its command line, and an unknown kind stops it with an error naming the kind and a
//! non-zero exit status.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kubeward::testing::{ControlPlane, wait_for};
use kubeward_examples::label_everything::LABEL;

/// Kills the example when the test ends, however it ends.
struct Example(Child);

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The example's command, with no HTTP endpoints, on `cp`.
fn example(cp: &ControlPlane, kind: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_label_everything"));
    command
        .args(["--kind", kind, "--metrics-bind-address", "0"])
        .args(["--health-probe-bind-address", "0"])
        .env("KUBECONFIG", cp.kubeconfig());
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_labels_every_object_of_the_kind_named_on_its_command_line()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("label-everything").await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let names = ["one", "two"];
    for name in names {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        configmaps.create(&PostParams::default(), &cm).await?;
    }
    let _example = Example(
        example(cp, "ConfigMap.v1")
            .args(["--namespace", &ns])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?,
    );
    for name in names {
        wait_for(
            Duration::from_secs(60),
            &format!("ConfigMap {name} labelled {LABEL}"),
            || async {
                let cm = configmaps.get(name).await.ok()?;
                let labels = cm.metadata.labels?;
                (labels.get(LABEL).map(String::as_str) == Some("label-configmaps")).then_some(())
            },
        )
        .await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_kind_stops_the_example_with_an_error_naming_it() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let kind = "Nothing.v1.nowhere.kubeward.dev";
    let output = example(cp, kind).output()?;
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
