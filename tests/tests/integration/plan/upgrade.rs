//! An upgrade that changes the owned objects' shape: its plan rewrites every ConfigMap (those
//! a selector names, with one), and running it then gives them the planned shape.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kubeward::plan::{Action, Options};
use kubeward::testing::{ControlPlane, install_definition};
use kubeward_examples::configmap_generator::ConfigMapGenerator;

use super::{converge, create_generators, generator, manager};

const GENERATORS: usize = 20;

#[tokio::test]
async fn an_upgrade_that_reshapes_the_config_maps_plans_a_rewrite_of_each_and_a_selector_narrows_it()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("plan-upgrade").await?;
    create_generators(cp, &ns, GENERATORS, |i| i % 2 == 0).await?;
    converge(cp, &ns, GENERATORS, false).await?;

    let expected_fields = [
        r#"data.format: None -> Some(String("v2"))"#.to_owned(),
        r#"metadata.labels: None -> Some(Object {"shape": String("v2")})"#.to_owned(),
    ];
    let planned = |plan: &kubeward::plan::Plan| -> Vec<(Action, String, Vec<String>)> {
        let mut planned: Vec<_> = plan
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
        planned
    };
    let rewrite = |i: usize| {
        let name = format!("{ns}/{}-generated", generator(i));
        (Action::Update, name, expected_fields.to_vec())
    };

    let upgrade = manager(cp, &ns, true)?.plan(Options::default()).await?;
    assert!(upgrade.failures.is_empty(), "{upgrade}");
    assert_eq!(
        planned(&upgrade),
        (0..GENERATORS).map(rewrite).collect::<Vec<_>>(),
        "{upgrade}"
    );

    let half = manager(cp, &ns, true)?
        .plan(Options::default().selector("half=a"))
        .await?;
    assert_eq!(half.reconciled, GENERATORS / 2, "{half}");
    assert_eq!(
        planned(&half),
        (0..GENERATORS).step_by(2).map(rewrite).collect::<Vec<_>>(),
        "{half}"
    );

    // The same version again plans nothing; the upgrade run gives every ConfigMap its shape.
    let same = manager(cp, &ns, false)?.plan(Options::default()).await?;
    assert!(same.changes.is_empty() && same.exit_code() == 0, "{same}");
    converge(cp, &ns, GENERATORS, true).await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let cm = config_maps
        .get(&format!("{}-generated", generator(3)))
        .await?;
    assert_eq!(
        cm.metadata
            .labels
            .unwrap_or_default()
            .get("shape")
            .map(String::as_str),
        Some("v2")
    );
    let after = manager(cp, &ns, true)?.plan(Options::default()).await?;
    assert!(after.changes.is_empty(), "after the upgrade ran: {after}");
    Ok(())
}
