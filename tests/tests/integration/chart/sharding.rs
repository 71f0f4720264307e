//! The chart's `sharding` values, rendered by `helm template`: every replica a shard of the
//! ring, with leader election for the sharder.

use serde_norway::Value;

use super::{manager, strings, template, the};

#[tokio::test]
async fn sharding_makes_every_replica_a_shard_of_the_ring_and_needs_leader_election()
-> anyhow::Result<()> {
    let docs = template(&["--set", "sharding.enabled=true", "--set", "replicaCount=3"]).await?;
    let deployment = the(&docs, "Deployment")?;
    assert_eq!(deployment["spec"]["replicas"].as_u64(), Some(3));
    let container = manager(deployment)?;
    let args = strings(&container["args"]);
    assert!(
        args.contains(&"--shard-ring=configmap-generator") && args.contains(&"--leader-elect"),
        "{args:?}"
    );
    // The shard id is the pod name, which the manager reads from POD_NAME.
    let env: Vec<&str> = container["env"]
        .as_sequence()
        .into_iter()
        .flatten()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(env.contains(&"POD_NAME"), "{env:?}");

    let unsharded = template(&[]).await?;
    let args = strings(&manager(the(&unsharded, "Deployment")?)?["args"])
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
    assert!(
        !args.iter().any(|a| a.starts_with("--shard-ring")),
        "{args:?}"
    );

    let without_leader = template(&[
        "--set",
        "sharding.enabled=true",
        "--set",
        "leaderElection.enabled=false",
    ])
    .await
    .expect_err("sharding without leader election is refused");
    assert!(
        format!("{without_leader:#}").contains("sharding.enabled needs leaderElection.enabled"),
        "{without_leader:#}"
    );
    Ok(())
}

/// The name of the assignment webhook's configuration for release `cmg`.
const ASSIGNMENT: &str = "cmg-configmap-generator-shard-assignment";

#[tokio::test]
async fn sharding_with_cert_manager_renders_the_assignment_webhook_and_nothing_else_does()
-> anyhow::Result<()> {
    let sharded = [
        "--set",
        "sharding.enabled=true",
        "--set",
        "webhooks.enabled=true",
        // The assignment entries ignore the values' policy and timeout: the sharder assigns
        // whatever they could not.
        "--set",
        "webhooks.failurePolicy=Fail",
        "--set",
        "webhooks.timeoutSeconds=10",
    ];
    let docs = template(&sharded).await?;
    let assignment =
        named(&docs, ASSIGNMENT)?.ok_or_else(|| anyhow::anyhow!("no {ASSIGNMENT} was rendered"))?;
    assert_eq!(
        assignment["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].as_str(),
        Some("default/cmg-configmap-generator-webhook-cert")
    );
    let webhooks = assignment["webhooks"].as_sequence().into_iter().flatten();
    let mut paths = Vec::new();
    for webhook in webhooks {
        let service = &webhook["clientConfig"]["service"];
        assert_eq!(
            service["name"].as_str(),
            Some("cmg-configmap-generator-webhook")
        );
        assert_eq!(service["namespace"].as_str(), Some("default"));
        assert_eq!(service["port"].as_u64(), Some(443));
        paths.push(service["path"].as_str().unwrap_or_default());
        assert_eq!(webhook["failurePolicy"].as_str(), Some("Ignore"));
        assert_eq!(webhook["timeoutSeconds"].as_u64(), Some(5));
        assert_eq!(webhook["sideEffects"].as_str(), Some("None"));
        assert_eq!(
            strings(&webhook["rules"][0]["operations"]),
            ["CREATE", "UPDATE"]
        );
        let unassigned = &webhook["objectSelector"]["matchExpressions"][0];
        assert_eq!(
            unassigned["key"].as_str(),
            Some("shard.alpha.sharding.timebertt.dev/configmap-generator")
        );
        assert_eq!(unassigned["operator"].as_str(), Some("DoesNotExist"));
        let namespaces = &webhook["namespaceSelector"]["matchExpressions"][0];
        assert_eq!(namespaces["operator"].as_str(), Some("NotIn"));
        assert_eq!(strings(&namespaces["values"]), ["kube-system"]);
    }
    // The paths the shards serve (kubeward's `sharding::admission`): the generators, and the
    // ConfigMaps they own.
    assert_eq!(
        paths,
        [
            "/shard-configmap-generator-demo-kubeward-dev-v1-configmapgenerator",
            "/shard-configmap-generator--v1-configmap",
        ]
    );

    // Watching some namespaces sends only theirs.
    let mut watching = sharded.to_vec();
    watching.extend(["--set", "watchNamespaces={team-a,team-b}"]);
    let docs = template(&watching).await?;
    let assignment =
        named(&docs, ASSIGNMENT)?.ok_or_else(|| anyhow::anyhow!("no {ASSIGNMENT} was rendered"))?;
    let namespaces = &assignment["webhooks"][0]["namespaceSelector"]["matchExpressions"][0];
    assert_eq!(namespaces["operator"].as_str(), Some("In"));
    assert_eq!(strings(&namespaces["values"]), ["team-a", "team-b"]);

    // Without sharding, without webhooks (nothing serves it), and self-signed (the operator
    // installs the entries itself, with its own CA), the chart renders none.
    for others in [
        &["--set", "webhooks.enabled=true"][..],
        &["--set", "sharding.enabled=true"],
        &[
            "--set",
            "sharding.enabled=true",
            "--set",
            "webhooks.enabled=true",
            "--set",
            "webhooks.certManager.enabled=false",
        ],
    ] {
        let docs = template(others).await?;
        assert!(named(&docs, ASSIGNMENT)?.is_none(), "{others:?}");
    }
    Ok(())
}

/// The MutatingWebhookConfiguration called `name`, if one was rendered.
fn named<'a>(docs: &'a [Value], name: &str) -> anyhow::Result<Option<&'a Value>> {
    let mut found = docs.iter().filter(|d| {
        d["kind"].as_str() == Some("MutatingWebhookConfiguration")
            && d["metadata"]["name"].as_str() == Some(name)
    });
    match (found.next(), found.next()) {
        (one, None) => Ok(one),
        (Some(_), Some(_)) => anyhow::bail!("{name} was rendered twice"),
        (None, Some(_)) => unreachable!("invariant: a second match follows a first"),
    }
}
