//! The chart's `sharding` values, rendered by `helm template`: every replica a shard of the
//! ring, with leader election for the sharder.

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
