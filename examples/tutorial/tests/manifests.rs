//! `countdown crd` and `countdown manifests` print and write the CRD and the rules of the code.

use std::process::Command;

use countdown::Countdown;
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubeward::crd::Definition as _;

fn countdown(args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_countdown"))
        .args(args)
        .env_remove("KUBECONFIG")
        .output()?;
    anyhow::ensure!(output.status.success(), "countdown {args:?}: {output:?}");
    Ok(String::from_utf8(output.stdout)?)
}

#[test]
fn countdown_crd_prints_the_definition_of_the_countdown_type() -> anyhow::Result<()> {
    let printed: CustomResourceDefinition = serde_norway::from_str(&countdown(&["crd"])?)?;
    assert_eq!(printed, Countdown::definition());
    Ok(())
}

#[test]
fn countdown_manifests_writes_the_crd_and_the_rules_the_derive_generates() -> anyhow::Result<()> {
    #[derive(serde::Deserialize)]
    struct RulesFile {
        rules: Vec<PolicyRule>,
    }
    let chart = tempfile::tempdir()?;
    let path = chart
        .path()
        .to_str()
        .ok_or_else(|| anyhow::anyhow!("the temporary folder's path is not UTF-8"))?;
    countdown(&["manifests", path])?;
    let written = |file: &str| std::fs::read_to_string(chart.path().join("files").join(file));
    let crd: CustomResourceDefinition = serde_norway::from_str(&written("crd.yaml")?)?;
    assert_eq!(crd, Countdown::definition());
    let rules: RulesFile = serde_norway::from_str(&written("rbac-rules.yaml")?)?;
    assert_eq!(rules.rules, Countdown::rbac_rules());
    assert!(
        rules
            .rules
            .iter()
            .any(|r| r.resources.as_deref() == Some(&["countdowns/status".to_owned()][..])),
        "the status subresource is writable"
    );
    Ok(())
}
