//! The example operator's `crd` and `manifests` subcommands, which come from its `Manager`, run
//! without a cluster and write what the chart commits.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubeward::crd::Definition as _;
use kubeward_examples::configmap_generator::ConfigMapGenerator;

/// The files `manifests` writes, relative to the chart.
const FILES: [&str; 2] = ["files/crd.yaml", "files/rbac-rules.yaml"];

fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../charts/configmap-generator")
}

/// Runs the operator with `args` in `dir`, with no kubeconfig anywhere: no `KUBECONFIG`, a
/// `HOME` without `.kube`, and not in a pod.
fn operator(args: &[&str], dir: &Path) -> anyhow::Result<Output> {
    program(env!("CARGO_BIN_EXE_configmap_generator"), args, dir)
}

/// As [`operator`], for the operator `binary`.
fn program(binary: &str, args: &[&str], dir: &Path) -> anyhow::Result<Output> {
    let home = tempfile::tempdir()?;
    Ok(Command::new(binary)
        .args(args)
        .current_dir(dir)
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env("HOME", home.path())
        .output()?)
}

fn succeeded(output: &Output) -> anyhow::Result<()> {
    anyhow::ensure!(
        output.status.success(),
        "exited with {}; stderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

/// The CRD `binary crd` prints, and its stderr.
fn printed_crd(binary: &str) -> anyhow::Result<(CustomResourceDefinition, String)> {
    let dir = tempfile::tempdir()?;
    let output = program(binary, &["crd"], dir.path())?;
    succeeded(&output)?;
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    Ok((serde_norway::from_slice(&output.stdout)?, stderr))
}

#[test]
fn crd_prints_the_polished_definition_without_a_cluster_or_kubeconfig() -> anyhow::Result<()> {
    let (printed, _) = printed_crd(env!("CARGO_BIN_EXE_configmap_generator_webhooks"))?;
    let mut expected = ConfigMapGenerator::definition();
    // The operator with webhooks serves the conversion: the subcommand points the conversion
    // webhook at its webhook Service, the one its admission webhook configurations name.
    let service = expected
        .spec
        .conversion
        .as_mut()
        .and_then(|c| c.webhook.as_mut())
        .and_then(|w| w.client_config.as_mut())
        .and_then(|c| c.service.as_mut())
        .expect("the CRD has a conversion webhook Service");
    service.name = "configmap-generator-webhooks-webhook".into();
    service.namespace = "default".into();
    assert_eq!(printed, expected);
    let columns: Vec<String> = printed.spec.versions[0]
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(columns, ["Ready", "Reason", "Message", "Age"]);
    assert_eq!(
        printed.spec.names.categories.as_deref(),
        Some(&["demo".to_owned()][..])
    );
    Ok(())
}

#[test]
fn crd_of_an_operator_that_serves_no_conversion_serves_only_the_stored_version()
-> anyhow::Result<()> {
    let (printed, stderr) = printed_crd(env!("CARGO_BIN_EXE_configmap_generator"))?;
    let mut expected = ConfigMapGenerator::definition();
    let conversion = expected.spec.conversion.as_mut().expect("two versions");
    conversion.strategy = "None".into();
    conversion.webhook = None;
    for version in &mut expected.spec.versions {
        version.served = version.storage;
    }
    assert_eq!(printed, expected);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("WARN")).collect();
    assert!(
        warnings.len() == 1 && warnings[0].contains("versions v1alpha1 are not served"),
        "one warning naming the unserved version: {stderr}"
    );
    Ok(())
}

#[test]
fn the_committed_chart_files_are_the_generated_ones() -> anyhow::Result<()> {
    // `manifests` without a folder writes into `charts/configmap-generator` of where it runs.
    let dir = tempfile::tempdir()?;
    let target = dir.path().join("charts/configmap-generator");
    std::fs::create_dir_all(&target)?;
    succeeded(&operator(&["manifests"], dir.path())?)?;
    for file in FILES {
        let generated = std::fs::read_to_string(target.join(file))?;
        let committed = std::fs::read_to_string(chart().join(file))?;
        assert!(
            committed == generated,
            "charts/configmap-generator/{file} differs from what the operator writes; regenerate \
             it with `cargo run -p kubeward-examples --bin configmap_generator -- manifests` \
             from the repository's root"
        );
    }
    let written = std::fs::read_dir(target.join("files"))?.count();
    assert_eq!(written, FILES.len(), "manifests writes exactly {FILES:?}");
    Ok(())
}

#[test]
fn manifests_into_a_missing_folder_fail_and_write_nothing() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let output = operator(&["manifests", "no-such-chart"], dir.path())?;
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no-such-chart does not exist"), "{stderr}");
    assert_eq!(std::fs::read_dir(dir.path())?.count(), 0);
    Ok(())
}

#[test]
fn help_opens_with_the_operators_own_text_and_lists_the_subcommands() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let output = operator(&["--help"], dir.path())?;
    succeeded(&output)?;
    let help = String::from_utf8(output.stdout)?;
    assert!(
        help.starts_with("The example operator of kubeward"),
        "{help}"
    );
    for line in ["  crd ", "  manifests "] {
        assert!(help.contains(line), "no {line:?} in\n{help}");
    }
    // Help is plain text: the flags' doc comments carry no rustdoc links.
    assert!(help.contains("--leader-election-on-loss"), "{help}");
    for link in ["](", "[`", "`]"] {
        let line = help.lines().find(|l| l.contains(link));
        assert!(line.is_none(), "--help shows doc-link syntax: {line:?}");
    }
    assert!(
        help.contains("[default: configmap-generator-leader]"),
        "the Lease is named after the program by default:\n{help}"
    );
    Ok(())
}

#[test]
fn manifests_of_the_operator_with_webhooks_write_its_webhook_configurations() -> anyhow::Result<()>
{
    let dir = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    std::fs::create_dir(dir.path().join("chart"))?;
    let output = Command::new(env!("CARGO_BIN_EXE_configmap_generator_webhooks"))
        .args(["--webhook-service=cmg-webhook", "manifests", "chart"])
        .current_dir(dir.path())
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env("HOME", home.path())
        .env("POD_NAMESPACE", "operators")
        .output()?;
    succeeded(&output)?;
    let text = std::fs::read_to_string(dir.path().join("chart/files/webhooks.yaml"))?;
    let documents: Vec<serde_json::Value> = text
        .split("\n---\n")
        .map(serde_norway::from_str)
        .collect::<Result<_, _>>()?;
    let kinds: Vec<&str> = documents
        .iter()
        .filter_map(|d| d["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration"
        ]
    );
    let validating = &documents[0]["webhooks"][0];
    assert_eq!(
        validating["clientConfig"]["service"],
        serde_json::json!({"name": "cmg-webhook", "namespace": "operators", "path": "/validate-demo-kubeward-dev-v1-configmapgenerator", "port": 443})
    );
    assert_eq!(
        validating["rules"][0]["resources"],
        serde_json::json!(["configmapgenerators"])
    );
    assert_eq!(validating["sideEffects"], "None");
    assert_eq!(
        documents[1]["webhooks"][0]["clientConfig"]["service"]["path"],
        "/mutate-demo-kubeward-dev-v1-configmapgenerator"
    );
    Ok(())
}
