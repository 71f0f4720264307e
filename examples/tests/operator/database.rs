//! The third example operator on the real control plane: a StatefulSet and a headless Service,
//! scaled and repaired, a storage change the API server refuses, and no finalizer: the testing
//! kit's garbage collector deletes the owned objects with their owner, as a cluster's would.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Service;
use kube::Api;
use kube::api::{ApiResource, DeleteParams, Patch, PatchParams, PostParams};
use kubeward::informer::CacheScope;
use kubeward::manager::{Config, Manager};
use kubeward::testing::{ControlPlane, GarbageCollector, install_definition, wait_for};
use kubeward_examples::database::{Database, DatabaseSpec, Databases};

use crate::waits::{REACT, condition_of, event};

/// The replicas and the requested storage of the StatefulSet `name`, once they satisfy `check`.
async fn stateful_set(
    sets: &Api<StatefulSet>,
    what: &str,
    check: impl Fn(Option<i32>, Option<String>) -> bool,
) -> anyhow::Result<StatefulSet> {
    let found = wait_for(REACT, what, || async {
        let set = sets.get("db").await.ok()?;
        let spec = &set.spec;
        let claims = spec.volume_claim_templates.as_deref().unwrap_or_default();
        let storage = claims
            .first()
            .and_then(|c| c.spec.as_ref()?.resources.as_ref()?.requests.as_ref())
            .and_then(|r| r.get("storage"))
            .map(|q| q.0.clone());
        check(spec.replicas, storage).then_some(set)
    })
    .await?;
    Ok(found)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_runs_as_a_stateful_set_refuses_a_storage_change_and_goes_with_its_owner()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<Database>(cp.client()).await?;
    let ns = cp.create_namespace("database").await?;
    let collector = GarbageCollector::start(
        cp.client(),
        &ns,
        vec![
            ApiResource::erase::<StatefulSet>(&()),
            ApiResource::erase::<Service>(&()),
        ],
    );
    let manager = Manager::new(
        cp.client(),
        Config::default().cache(CacheScope::default().namespaces([ns.clone()])),
    )?;
    manager.add(Database::controller(Databases))?;
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());

    let dbs: Api<Database> = Api::namespaced(cp.client(), &ns);
    let sets: Api<StatefulSet> = Api::namespaced(cp.client(), &ns);
    let services: Api<Service> = Api::namespaced(cp.client(), &ns);
    let spec = DatabaseSpec {
        image: "registry.invalid/db:16".into(),
        replicas: 1,
        storage: "1Gi".into(),
    };
    dbs.create(&PostParams::default(), &Database::new("db", spec))
        .await?;
    // No kube-controller-manager runs here: no pod ever becomes ready on its own.
    let db = condition_of(&dbs, "db", Database::CONDITION, |c| {
        c.status == "False" && c.message == "0 of 1 replicas ready"
    })
    .await?;
    assert_eq!(Database::CONDITION, "Ready");
    let observed = db.status.as_ref().and_then(|s| s.observed_generation);
    assert_eq!(observed, db.metadata.generation, "{:?}", db.status);
    assert!(
        db.metadata.finalizers.is_none(),
        "no finalizer: {:?}",
        db.metadata
    );
    let one = |r: Option<i32>, s: Option<String>| r == Some(1) && s.as_deref() == Some("1Gi");
    let set = stateful_set(&sets, "one replica with 1Gi", one).await?;
    assert_eq!(set.spec.service_name.as_deref(), Some("db"));
    let service = services.get("db").await?;
    let cluster_ip = service.spec.and_then(|s| s.cluster_ip);
    assert_eq!(cluster_ip.as_deref(), Some("None"), "a headless Service");
    event(cp, &db, "Created", "Created StatefulSet db").await?;
    event(cp, &db, "Created", "Created Service db").await?;

    let scale = serde_json::json!({ "spec": { "replicas": 3 } });
    dbs.patch("db", &PatchParams::default(), &Patch::Merge(&scale))
        .await?;
    stateful_set(&sets, "three replicas", |r, _| r == Some(3)).await?;
    // Someone scales the StatefulSet by hand: the owner's spec wins again.
    let by_hand = serde_json::json!({ "spec": { "replicas": 5 } });
    sets.patch("db", &PatchParams::default(), &Patch::Merge(&by_hand))
        .await?;
    stateful_set(&sets, "three replicas again", |r, _| r == Some(3)).await?;
    // The pods come up: the StatefulSet's status change reconciles its owner.
    let up = serde_json::json!({ "status": { "replicas": 3, "readyReplicas": 3 } });
    sets.patch_status("db", &PatchParams::default(), &Patch::Merge(&up))
        .await?;
    condition_of(&dbs, "db", Database::CONDITION, |c| {
        c.status == "True" && c.message == "3 of 3 replicas ready"
    })
    .await?;

    // A StatefulSet's volume templates cannot change: the apply is refused, and the API server's
    // reason and words land on the operator's condition.
    let resize = serde_json::json!({ "spec": { "storage": "2Gi" } });
    dbs.patch("db", &PatchParams::default(), &Patch::Merge(&resize))
        .await?;
    let refused = condition_of(&dbs, "db", Database::CONDITION, |c| {
        c.status == "False" && c.reason == "Invalid"
    })
    .await?;
    let status = refused.status.unwrap_or_default();
    let message = &status.conditions.find("Ready").map(|c| c.message.clone());
    assert!(
        message.as_deref().is_some_and(|m| m.contains("Forbidden")),
        "the API server's words: {message:?}"
    );
    let still = |r: Option<i32>, s: Option<String>| r == Some(3) && s.as_deref() == Some("1Gi");
    stateful_set(&sets, "still 1Gi", still).await?;

    dbs.delete("db", &DeleteParams::default()).await?;
    wait_for(
        REACT,
        "the Database and what it owned to be gone",
        || async {
            let gone = dbs.get_opt("db").await.ok()?.is_none()
                && sets.get_opt("db").await.ok()?.is_none()
                && services.get_opt("db").await.ok()?.is_none();
            gone.then_some(())
        },
    )
    .await?;
    assert_eq!(collector.collected(), 2, "the collector deleted both");
    token.cancel();
    tokio::time::timeout(REACT, run).await???;
    Ok(())
}
