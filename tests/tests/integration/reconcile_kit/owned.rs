//! `ctx.apply` and `ctx.prune`: owner references, field manager, no write when nothing changed,
//! and pruning of exactly the stale owned objects.

use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use kubeward::reconcile::IgnoreNotFound as _;

use super::*;

/// Sets the `kit/round` annotation of `name`: a change that reconciles it without touching
/// what it asks for.
async fn next_round(bundles: &Api<Bundle>, name: &str, round: &str) -> anyhow::Result<()> {
    let patch = serde_json::json!({ "metadata": { "annotations": { "kit/round": round } } });
    bundles
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

#[tokio::test]
async fn apply_sets_the_controller_owner_and_field_manager_and_an_unchanged_reconcile_writes_nothing()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let (ns, bundles) = namespace(cp, "kit-apply").await?;
    let (client, writes, _) = counting_client(cp);
    let running = Running::start(client, &ns);
    let created = create_ready(&bundles, &bundle("web", &["one", "two"])).await?;

    let first = running.kit.done.lock().first().map(|d| d.applied.clone());
    assert_eq!(
        first,
        Some(vec![Operation::Created, Operation::Created]),
        "the first reconcile created both ConfigMaps (the API server answered 201)"
    );
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let one = configmaps.get("one").await?;
    let owner = one
        .owner_references()
        .iter()
        .find(|r| r.controller == Some(true))
        .expect("the applied ConfigMap has a controller owner reference");
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), Some(&owner.uid)),
        ("Bundle", "web", created.metadata.uid.as_ref())
    );
    let managers: Vec<(String, String)> = one
        .managed_fields()
        .iter()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        managers.contains(&("bundle".to_owned(), "Apply".to_owned())),
        "the controller's name is the field manager of a server-side apply: {managers:?}"
    );
    assert_eq!(one.labels().get("kit").map(String::as_str), Some("child"));

    // Round 1 lets the ConfigMaps' own watch events settle into the cache; round 2 must then
    // find everything as it wants it.
    next_round(&bundles, "web", "1").await?;
    running.reconciled("1").await?;
    let before = writes.all_but_events();
    next_round(&bundles, "web", "2").await?;
    let round = running.reconciled("2").await?;
    let after = writes.all_but_events();
    assert!(!round.wrote_status, "the status was already as wanted");
    assert_eq!(round.applied, [Operation::Unchanged, Operation::Unchanged]);
    // The test patches the annotation through another client, which is not counted.
    assert_eq!(
        after[before.len()..],
        [] as [String; 0],
        "a reconcile that changes nothing sends no write (before: {before:?})"
    );
    assert!(
        !writes
            .to(&format!("/namespaces/{ns}/configmaps/one"))
            .is_empty(),
        "the counting client did see the first apply"
    );

    // A hand edit of an applied field is seen in the cache and applied back.
    let seen = running.kit.done.lock().len();
    let tamper = serde_json::json!({ "data": { "content": "tampered" } });
    configmaps
        .patch("one", &PatchParams::default(), &Patch::Merge(&tamper))
        .await?;
    wait_for(REACT, "ConfigMap one to be applied back", || async {
        let cm = configmaps.get("one").await.ok()?;
        let back = cm.data?.get("content").map(String::as_str) == Some("kit");
        (back && running.kit.done.lock().len() > seen).then_some(())
    })
    .await?;
    let last = running.kit.done.lock().last().map(|d| d.applied.clone());
    assert_eq!(
        last,
        Some(vec![Operation::Updated, Operation::Unchanged]),
        "the reconcile that put one back updated it and left two"
    );
    running.stop().await
}

#[tokio::test]
async fn prune_deletes_only_the_owned_objects_the_reconcile_no_longer_produces()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let (ns, bundles) = namespace(cp, "kit-prune").await?;
    let running = Running::start(cp.client(), &ns);
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    configmaps
        .create(&PostParams::default(), &child("stranger", "not owned"))
        .await?;
    create_ready(&bundles, &bundle("web", &["a", "b", "c"])).await?;
    create_ready(&bundles, &bundle("other", &["theirs"])).await?;

    let patch = serde_json::json!({
        "metadata": { "annotations": { "kit/round": "shrunk" } },
        "spec": { "children": ["a"] },
    });
    bundles
        .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_for(REACT, "ConfigMaps b and c to be pruned", || async {
        let names: Vec<String> = configmaps
            .list(&ListParams::default().labels("kit=child"))
            .await
            .ok()?
            .items
            .iter()
            .map(ResourceExt::name_any)
            .collect();
        (!names.contains(&"b".to_owned()) && !names.contains(&"c".to_owned())).then_some(())
    })
    .await?;
    for kept in ["a", "stranger", "theirs"] {
        assert!(
            configmaps.get_opt(kept).await?.is_some(),
            "{kept} is still there"
        );
    }
    let pruned: Vec<String> = running
        .kit
        .done
        .lock()
        .iter()
        .flat_map(|d| d.pruned.iter().map(ToString::to_string))
        .collect();
    let mut pruned = pruned;
    pruned.sort();
    assert_eq!(pruned, [format!("{ns}/b"), format!("{ns}/c")]);

    // Deleting what is already gone is no error.
    let gone = configmaps
        .delete("b", &DeleteParams::default())
        .await
        .ignore_not_found()?;
    assert!(gone.is_none());
    running.stop().await
}

#[tokio::test]
async fn an_apply_the_api_server_refuses_says_why_in_the_errors_own_text() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let (ns, bundles) = namespace(cp, "kit-refused").await?;
    let running = Running::start(cp.client(), &ns);
    bundles
        .create(&PostParams::default(), &bundle("web", &["Not_A_Name"]))
        .await?;
    let text = wait_for(REACT, "the refused apply's error", || async {
        running.kit.errors.lock().first().cloned()
    })
    .await?;
    // `{error}` of the reconciler's `kubeward::Error`, with no match on `kube::Error::Api`.
    assert!(
        text.starts_with(&format!("applying ConfigMap {ns}/Not_A_Name: "))
            && text.contains("Invalid value: \"Not_A_Name\""),
        "what was done and the API server's reason: {text}"
    );
    running.stop().await
}
