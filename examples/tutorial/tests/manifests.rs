//! `countdown crd` and `countdown rbac` print the CRD and the rules of the code, for the chart.

use std::process::Command;

use countdown::Countdown;
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt as _;

fn countdown(subcommand: &str) -> anyhow::Result<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_countdown"))
        .arg(subcommand)
        .output()?;
    anyhow::ensure!(
        output.status.success(),
        "countdown {subcommand}: {output:?}"
    );
    Ok(String::from_utf8(output.stdout)?)
}

#[test]
fn countdown_crd_prints_the_crd_of_the_countdown_type() -> anyhow::Result<()> {
    let printed: CustomResourceDefinition = serde_norway::from_str(&countdown("crd")?)?;
    assert_eq!(printed, Countdown::crd());
    Ok(())
}

#[test]
fn countdown_rbac_prints_the_rules_the_derive_generates_as_the_charts_rules_file()
-> anyhow::Result<()> {
    #[derive(serde::Deserialize)]
    struct RulesFile {
        rules: Vec<PolicyRule>,
    }
    let printed: RulesFile = serde_norway::from_str(&countdown("rbac")?)?;
    assert_eq!(printed.rules, Countdown::rbac_rules());
    assert!(
        printed
            .rules
            .iter()
            .any(|r| r.resources.as_deref() == Some(&["countdowns/status".to_owned()][..])),
        "the status subresource is writable"
    );
    Ok(())
}
