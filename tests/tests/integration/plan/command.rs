//! The `plan` command of an operator: its text and JSON, and its exit codes (0 nothing to do,
//! 2 changes, 1 failures or a bad selector).

use std::process::Output;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kubeward::testing::{ControlPlane, install_definition};
use kubeward_examples::configmap_generator::{ConfigMapGenerator, ConfigMapGeneratorSpec};
use serde_json::json;

use super::{converge, create_generators};

/// How long one `plan` may take.
const PLAN: Duration = Duration::from_secs(120);

/// Runs `plan_generator --watch-namespaces NS plan ARGS` and returns its output.
async fn plan(cp: &ControlPlane, ns: &str, args: &[&str]) -> anyhow::Result<Output> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_plan_generator"));
    command
        .env("KUBECONFIG", cp.kubeconfig())
        .env("RUST_LOG", "warn")
        .args(["--watch-namespaces", ns, "plan"])
        .args(args)
        .kill_on_drop(true);
    Ok(tokio::time::timeout(PLAN, command.output()).await??)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn the_plan_command_prints_the_plan_and_exits_0_without_changes_2_with_and_1_on_failure()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("plan-command").await?;
    create_generators(cp, &ns, 3, |_| false).await?;
    converge(cp, &ns, 3, false).await?;

    let nothing = plan(cp, &ns, &[]).await?;
    assert_eq!(nothing.status.code(), Some(0), "{nothing:?}");
    assert!(
        stdout(&nothing).ends_with(
            "\nPlan: 0 to create, 0 to update, 0 to delete (3 reconciled by 1 controller, 0 \
             paused, 0 failed).\n"
        ),
        "{}",
        stdout(&nothing)
    );

    let config_maps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let by_hand = json!({ "data": { "content": "drifted" } });
    (config_maps)
        .patch(
            "gen-0001-generated",
            &PatchParams::default(),
            &Patch::Merge(&by_hand),
        )
        .await?;
    let changes = plan(cp, &ns, &[]).await?;
    assert_eq!(changes.status.code(), Some(2), "{changes:?}");
    let text = stdout(&changes);
    assert!(
        text.starts_with("Dry run: every write was sent with dryRun=All; nothing was written")
            && text.contains(&format!(
                "\n~ update ConfigMap {ns}/gen-0001-generated\n    data.content: \"drifted\" -> \"1\"\n"
            ))
            && text.contains("\nPlan: 0 to create, 1 to update, 0 to delete (3 reconciled"),
        "{text}"
    );

    let json = plan(cp, &ns, &["-o", "json"]).await?;
    assert_eq!(json.status.code(), Some(2), "{json:?}");
    let parsed: serde_json::Value = serde_json::from_slice(&json.stdout)?;
    assert_eq!(
        parsed["summary"],
        json!({"create": 0, "update": 1, "delete": 0})
    );
    assert_eq!(parsed["changes"][0]["fields"][0]["after"], json!("1"));

    let selected = plan(cp, &ns, &["-l", "nothing=here"]).await?;
    assert_eq!(selected.status.code(), Some(0), "{selected:?}");
    let bad = plan(cp, &ns, &["-l", "a in ("]).await?;
    assert_eq!(bad.status.code(), Some(1), "{bad:?}");

    // A generator whose ConfigMap name is too long: the dry-run apply is refused, its
    // reconcile fails, and so does the plan.
    let long = format!("g{}", "x".repeat(245));
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let spec = ConfigMapGeneratorSpec {
        content: "x".into(),
    };
    generators
        .create(
            &PostParams::default(),
            &ConfigMapGenerator::new(&long, spec),
        )
        .await?;
    let failed = plan(cp, &ns, &[]).await?;
    assert_eq!(failed.status.code(), Some(1), "{failed:?}");
    assert!(
        stdout(&failed).contains(&format!("! failed plan-generator {ns}/{long}: ")),
        "{}",
        stdout(&failed)
    );
    Ok(())
}
