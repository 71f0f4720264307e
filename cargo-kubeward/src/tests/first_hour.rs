//! The first hour with a generated project, each trap a new user fell into: scripts that find
//! their tools, CRDs installed before a run, webhooks served on loopback, tests that survive a
//! new spec field and leave no namespace Terminating.

use std::path::Path;
use std::process::Command;

use super::{cargo_kubeward, project, snapshot};

/// Runs the project's script `name` with `cargo`, `kubectl` and (when `helm`) `helm` stand-ins
/// that append their arguments (and `kubectl`'s input) to `log`, in an environment without the
/// tool cache; its exit status and standard error.
fn script(
    root: &Path,
    name: &str,
    helm: bool,
    env: &[(&str, &str)],
) -> anyhow::Result<(bool, String)> {
    let bin = root.join("fake-bin");
    std::fs::create_dir_all(&bin)?;
    let mut tools = vec![
        // `cargo run -- crd` prints a CRD; every other command does nothing.
        (
            "cargo",
            "echo \"cargo $*\" >>\"$LOG\"; case \"$*\" in *' crd') echo 'kind: CustomResourceDefinition';; esac",
        ),
        ("kubectl", "echo \"kubectl $* <<$(cat)\" >>\"$LOG\""),
        ("git", "exit 1"),
    ];
    if helm {
        tools.push(("helm", "echo \"helm $*\" >>\"$LOG\""));
    }
    for (tool, body) in tools {
        let path = bin.join(tool);
        std::fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n"))?;
        crate::plan::make_executable(&path)?;
    }
    let output = Command::new("bash")
        .arg(root.join("scripts").join(name))
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("LOG", root.join("log"))
        .env("KUBEWARD_BIN", root.join("no-tool-cache"))
        .env_remove("CI")
        .envs(env.iter().copied())
        .output()?;
    Ok((output.status.success(), String::from_utf8(output.stderr)?))
}

#[cfg(unix)]
#[test]
fn scripts_run_installs_the_crds_then_runs_the_operator_with_webhooks_on_loopback()
-> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    cargo_kubeward(&root, "create api --version v1alpha1 --kind Memo")?;
    let (ok, stderr) = script(&root, "run", false, &[])?;
    assert!(ok, "{stderr}");
    let log = std::fs::read_to_string(root.join("log"))?;
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [
            "cargo run --quiet -- crd",
            "kubectl apply --server-side --force-conflicts -f - <<kind: CustomResourceDefinition",
            "cargo run --quiet --",
        ]
    );

    cargo_kubeward(&root, "create webhook --kind Memo --validation")?;
    std::fs::remove_file(root.join("log"))?;
    let (ok, stderr) = script(&root, "run", false, &[("WEBHOOK_PORT", "9555")])?;
    assert!(ok, "{stderr}");
    let log = std::fs::read_to_string(root.join("log"))?;
    assert!(
        log.ends_with(
            "cargo run --quiet -- --webhook-port 9555 --webhook-self-signed --webhook-host \
             127.0.0.1 --webhook-url https://127.0.0.1:9555\n"
        ),
        "{log}"
    );
    let readme = &snapshot(&root)["README.md"];
    assert!(readme.contains("kubeconfig scripts/run\n"), "{readme}");
    assert!(readme.contains("--webhook-self-signed"), "{readme}");
    Ok(())
}

#[cfg(unix)]
#[test]
fn scripts_ci_says_how_to_get_helm_instead_of_command_not_found() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    let (ok, stderr) = script(&root, "ci", false, &[])?;
    assert!(
        ok,
        "without helm, outside CI, the lint is skipped: {stderr}"
    );
    assert!(stderr.contains("skipping helm lint: no helm on PATH or in ~/.cache/kubeward/bin"));
    assert!(!stderr.contains("command not found"), "{stderr}");
    let (ok, stderr) = script(&root, "ci", false, &[("CI", "true")])?;
    assert!(
        !ok && stderr.contains("no helm on PATH"),
        "in CI it fails: {stderr}"
    );
    assert!(!stderr.contains("command not found"), "{stderr}");

    let cache = root.join("no-tool-cache");
    std::fs::create_dir_all(&cache)?;
    std::fs::rename(root.join("fake-bin/kubectl"), cache.join("helm"))?;
    let (ok, stderr) = script(&root, "ci", false, &[("CI", "true")])?;
    assert!(ok, "helm from the tool cache: {stderr}");
    let log = std::fs::read_to_string(root.join("log"))?;
    assert!(log.contains("kubectl lint charts/memo-operator"), "{log}");
    Ok(())
}

#[test]
fn the_webhook_test_and_the_integration_test_survive_what_a_user_does_first() -> anyhow::Result<()>
{
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    cargo_kubeward(&root, "create api --version v1alpha1 --kind Memo")?;
    cargo_kubeward(
        &root,
        "create webhook --kind Memo --defaulting --validation",
    )?;
    let files = snapshot(&root);
    let webhook = &files["src/webhook/memo.rs"];
    assert!(
        webhook.contains("Memo::new(\"test\", MemoSpec::default())")
            && !webhook.contains("MemoSpec {"),
        "a new spec field must not break the webhook's tests: {webhook}"
    );
    let test = &files["tests/integration/memo.rs"];
    let deleted = test.find("objects.delete(&name").unwrap_or(usize::MAX);
    let returned = test.find("became_ready?;").unwrap_or(0);
    assert!(
        deleted < returned,
        "the sample is deleted, its finalizer done by the running operator, however the test \
         ends: {test}"
    );
    Ok(())
}
