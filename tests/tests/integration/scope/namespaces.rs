//! A manager watching two namespaces of three reconciles and caches both as one, and never the
//! third.

use kubeward::informer::CacheScope;
use kubeward::manager::{Config, Manager};
use kubeward::testing::ControlPlane;

use super::{REACT, Seen, create};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_watching_two_of_three_namespaces_never_reconciles_or_caches_the_third()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let client = cp.client();
    let [a, b, c] = [
        cp.create_namespace("scope-a").await?,
        cp.create_namespace("scope-b").await?,
        cp.create_namespace("scope-c").await?,
    ];
    // Before the manager starts: had the third namespace been listed, its object would be in
    // the cache once the cache synced, since syncing waits for every namespace's first list.
    for ns in [&a, &b, &c] {
        create(&client, ns, "before", &[]).await?;
    }
    let seen = Seen::default();
    let scope = CacheScope::default().namespaces([a.clone(), b.clone()]);
    let manager = Manager::new(client.clone(), Config::default().cache(scope))?;
    manager.add(kubeward::controller::Controller::new(seen.clone()).name("scope-namespaces"))?;
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());

    seen.reconciled(&format!("{a}/before")).await?;
    seen.reconciled(&format!("{b}/before")).await?;
    // After the start: the third namespace's object is made before the first's. A watch over
    // every namespace would deliver it first; the first namespace's watch cannot.
    create(&client, &c, "after", &[]).await?;
    create(&client, &a, "after", &[]).await?;
    seen.reconciled(&format!("{a}/after")).await?;

    let in_c = |k: &String| k.starts_with(&format!("{c}/"));
    let reconciled = seen.reconciled_keys();
    assert!(
        !reconciled.iter().any(in_c),
        "reconciled an object of the unwatched namespace: {reconciled:?}"
    );
    // One store across both namespaces: the reconcile of a's object lists b's too.
    let cached = seen.cached_keys();
    let expected: std::collections::BTreeSet<String> = [
        format!("{a}/after"),
        format!("{a}/before"),
        format!("{b}/before"),
    ]
    .into();
    assert_eq!(cached, expected, "the cache across the two namespaces");

    token.cancel();
    tokio::time::timeout(REACT, run).await???;
    Ok(())
}
