//! The example operator's Helm chart lints, renders a restricted pod and installs with enough RBAC and no more.

mod install;
mod pod_security;
mod render;
mod secure_serving;
mod sharding;
mod tutorial;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_norway::Value;

const CRD_NAME: &str = "configmapgenerators.demo.kubeward.dev";
const SERVICE_MONITOR: &str = "monitoring.coreos.com/v1/ServiceMonitor";

fn chart_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../charts/configmap-generator")
}

fn all_on_values() -> PathBuf {
    chart_dir().join("ci/all-on-values.yaml")
}

/// Finds `program` where `scripts/setup` installs it (see `kubeward::testing::Binaries::tool`).
fn tool(program: &str) -> anyhow::Result<PathBuf> {
    Ok(kubeward::testing::Binaries::tool(program)?)
}

/// Runs `program args`, returning stdout on success and an error quoting stderr otherwise.
pub(crate) async fn run(
    program: &str,
    args: &[&str],
    stdin: Option<&str>,
) -> anyhow::Result<String> {
    use tokio::io::AsyncWriteExt as _;

    let mut command = tokio::process::Command::new(tool(program)?);
    command
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let mut input = child
        .stdin
        .take()
        .ok_or_else(|| anyhow::anyhow!("stdin of {program} was not piped"))?;
    input
        .write_all(stdin.unwrap_or_default().as_bytes())
        .await?;
    drop(input);
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .map_err(|_| anyhow::anyhow!("{program} {args:?} did not finish within 120 s"))??;
    let stdout = String::from_utf8(output.stdout)?;
    if output.status.success() {
        Ok(stdout)
    } else {
        anyhow::bail!(
            "{program} {args:?} failed with {}:\n{}\n{stdout}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
    }
}

pub(crate) async fn helm(args: &[&str]) -> anyhow::Result<String> {
    run("helm", args, None).await
}

/// `helm template` of the chart as release `cmg` in `default`, with `extra` flags.
async fn template(extra: &[&str]) -> anyhow::Result<Vec<Value>> {
    let chart = chart_dir();
    let mut args = vec![
        "template",
        "cmg",
        path_str(&chart)?,
        "--namespace",
        "default",
    ];
    args.extend_from_slice(extra);
    documents(&helm(&args).await?)
}

pub(crate) fn path_str(path: &Path) -> anyhow::Result<&str> {
    path.to_str()
        .ok_or_else(|| anyhow::anyhow!("{} is not UTF-8", path.display()))
}

/// The non-empty documents of a multi-document YAML stream.
pub(crate) fn documents(yaml: &str) -> anyhow::Result<Vec<Value>> {
    let mut docs = Vec::new();
    for document in serde_norway::Deserializer::from_str(yaml) {
        let value = serde::Deserialize::deserialize(document)?;
        if !matches!(value, Value::Null) {
            docs.push(value);
        }
    }
    Ok(docs)
}

fn kinds(docs: &[Value]) -> BTreeSet<String> {
    docs.iter()
        .filter_map(|d| d["kind"].as_str().map(str::to_owned))
        .collect()
}

fn the<'a>(docs: &'a [Value], kind: &str) -> anyhow::Result<&'a Value> {
    let mut found = docs.iter().filter(|d| d["kind"].as_str() == Some(kind));
    match (found.next(), found.next()) {
        (Some(one), None) => Ok(one),
        (None, _) => anyhow::bail!("no {kind} was rendered; kinds: {:?}", kinds(docs)),
        (Some(_), Some(_)) => anyhow::bail!("more than one {kind} was rendered"),
    }
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_sequence()
        .map(|s| s.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The manager container of a rendered Deployment.
fn manager(deployment: &Value) -> anyhow::Result<&Value> {
    deployment["spec"]["template"]["spec"]["containers"]
        .as_sequence()
        .and_then(|c| c.iter().find(|c| c["name"].as_str() == Some("manager")))
        .ok_or_else(|| anyhow::anyhow!("the Deployment has no `manager` container"))
}
