//! 1 % of the generators' ConfigMaps drifted by hand: the plan lists exactly those, etcd's
//! revision does not move while it plans, and the real run then makes exactly those writes.

use std::process::Command;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kubeward::plan::{Action, CHANGES, Options};
use kubeward::testing::{ControlPlane, install_definition};
use kubeward_examples::configmap_generator::ConfigMapGenerator;
use serde_json::json;

use super::{converge, create_generators, generator, manager, versions};

/// Generators; every hundredth one's ConfigMap is drifted.
const GENERATORS: usize = 1000;
const EVERY: usize = 100;

/// etcd's current revision, which every write to it increments.
fn etcd_revision(cp: &ControlPlane) -> anyhow::Result<i64> {
    let etcdctl = std::env::var_os("KUBEWARD_BIN").map_or_else(
        || "etcdctl".into(),
        |bin| std::path::Path::new(&bin).join("etcdctl"),
    );
    let output = Command::new(etcdctl)
        .env("ETCDCTL_API", "3")
        .args([
            "--endpoints",
            cp.etcd_url(),
            "endpoint",
            "status",
            "-w",
            "json",
        ])
        .output()?;
    anyhow::ensure!(
        output.status.success(),
        "etcdctl endpoint status: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let status: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    status[0]["Status"]["header"]["revision"]
        .as_i64()
        .ok_or_else(|| anyhow::anyhow!("no revision in {status}"))
}

#[tokio::test]
async fn a_plan_lists_exactly_the_drifted_config_maps_persists_nothing_and_the_run_makes_those_writes()
-> anyhow::Result<()> {
    // Its own control plane, so that etcd's revision counts this test's writes only: no
    // endpoint reconciler (it renews the API server's master lease in etcd every 10 s) and no
    // compaction (each writes a key).
    let cp = ControlPlane::start_with_apiserver_flags(&[
        "--endpoint-reconciler-type=none",
        "--etcd-compaction-interval=0",
    ])
    .await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("plan-drift").await?;
    create_generators(&cp, &ns, GENERATORS, |_| false).await?;
    converge(&cp, &ns, GENERATORS, false).await?;

    let config_maps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let drifted: Vec<String> = (0..GENERATORS)
        .step_by(EVERY)
        .map(|i| format!("{}-generated", generator(i)))
        .collect();
    for name in &drifted {
        let by_hand = json!({ "data": { "content": "drifted by hand" } });
        let params = PatchParams::default();
        config_maps
            .patch(name, &params, &Patch::Merge(&by_hand))
            .await?;
    }

    let before = etcd_revision(&cp)?;
    let versions_before = versions(&cp, &ns).await?;
    let plan = manager(&cp, &ns, false)?.plan(Options::default()).await?;
    assert_eq!(
        etcd_revision(&cp)?,
        before,
        "planning wrote to etcd; the plan:\n{plan}"
    );
    assert_eq!(versions(&cp, &ns).await?, versions_before);

    assert!(
        plan.failures.is_empty() && plan.refused.is_empty(),
        "{plan}"
    );
    assert_eq!((plan.reconciled, plan.paused), (GENERATORS, 0), "{plan}");
    let mut planned: Vec<(Action, String, Vec<String>)> = plan
        .changes
        .iter()
        .map(|c| {
            let fields = c
                .fields
                .iter()
                .map(|f| format!("{}: {:?} -> {:?}", f.path, f.before, f.after));
            (c.action, c.object(), fields.collect())
        })
        .collect();
    planned.sort();
    let expected: Vec<(Action, String, Vec<String>)> = (0..GENERATORS)
        .step_by(EVERY)
        .map(|i| {
            let field =
                format!("data.content: Some(String(\"drifted by hand\")) -> Some(String(\"{i}\"))");
            (
                Action::Update,
                format!("{ns}/{}-generated", generator(i)),
                vec![field],
            )
        })
        .collect();
    assert_eq!(planned, expected, "{plan}");
    assert_eq!(plan.exit_code(), CHANGES);

    // For real now: exactly the planned writes, one etcd revision each.
    converge(&cp, &ns, GENERATORS, false).await?;
    assert_eq!(
        etcd_revision(&cp)? - before,
        i64::try_from(drifted.len())?,
        "the real run wrote more (or less) than the {} planned updates",
        drifted.len()
    );
    let versions_after = versions(&cp, &ns).await?;
    let mut changed: Vec<&String> = versions_after
        .iter()
        .filter(|(object, version)| versions_before.get(*object) != Some(version))
        .map(|(object, _)| object)
        .collect();
    changed.sort();
    let expected: Vec<String> = drifted
        .iter()
        .map(|name| format!("ConfigMap {name}"))
        .collect();
    assert_eq!(changed, expected.iter().collect::<Vec<_>>());
    Ok(())
}
