//! The same API checks pass on the fake API server and on the real control plane.
//!
//! Each check is an async fn taking a client and a namespace; [`Backend`] hands out both for
//! either server, so a future suite (controllers) can reuse it the same way.

use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{Api, Client, ResourceExt};
use kubeward::testing::{ControlPlane, FakeApiServer, wait_for};
use serde_json::json;

/// Where a check runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    /// A fresh in-memory [`FakeApiServer`].
    Fake,
    /// The shared local control plane, in a fresh namespace.
    ControlPlane,
}

impl Backend {
    /// A client and a namespace to work in, with `ConfigMap` and `Deployment` served.
    pub(crate) async fn connect(self) -> anyhow::Result<(Client, String)> {
        match self {
            Self::Fake => {
                let fake = FakeApiServer::new();
                fake.register::<ConfigMap>();
                fake.register::<Deployment>();
                Ok((fake.client(), "conformance".to_owned()))
            }
            Self::ControlPlane => {
                let cp = ControlPlane::shared().await?;
                Ok((cp.client(), cp.create_namespace("conformance").await?))
            }
        }
    }
}

type CheckFuture = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;

/// A check: runs against a client in a namespace.
type Check = fn(Client, String) -> CheckFuture;

/// The checks, by name.
const CHECKS: &[(&str, Check)] = &[
    ("errors_carry_the_status_code_and_reason", |c, ns| {
        Box::pin(errors_carry_the_status_code_and_reason(c, ns))
    }),
    ("list_filters_by_selectors_and_pages", |c, ns| {
        Box::pin(list_filters_by_selectors_and_pages(c, ns))
    }),
    ("a_stale_update_is_a_409_conflict", |c, ns| {
        Box::pin(a_stale_update_is_a_409_conflict(c, ns))
    }),
    ("merge_and_apply_patches_merge", |c, ns| {
        Box::pin(merge_and_apply_patches_merge(c, ns))
    }),
    ("the_status_subresource_is_separate", |c, ns| {
        Box::pin(the_status_subresource_is_separate(c, ns))
    }),
    ("generation_follows_spec_changes_only", |c, ns| {
        Box::pin(generation_follows_spec_changes_only(c, ns))
    }),
    ("finalizers_delay_deletion", |c, ns| {
        Box::pin(finalizers_delay_deletion(c, ns))
    }),
    (
        "a_watch_from_a_resource_version_sees_later_events",
        |c, ns| Box::pin(a_watch_from_a_resource_version_sees_later_events(c, ns)),
    ),
    ("a_watcher_lists_then_follows_changes", |c, ns| {
        Box::pin(a_watcher_lists_then_follows_changes(c, ns))
    }),
    ("create_and_update_fill_in_server_fields", |c, ns| {
        Box::pin(create_and_update_fill_in_server_fields(c, ns))
    }),
    ("a_selected_watch_sees_objects_enter_and_leave", |c, ns| {
        Box::pin(a_selected_watch_sees_objects_enter_and_leave(c, ns))
    }),
    (
        "deletion_with_finalizers_is_watched_as_modified_then_deleted",
        |c, ns| Box::pin(deletion_with_finalizers_is_watched_as_modified_then_deleted(c, ns)),
    ),
    (
        "apply_drops_unapplied_fields_and_reports_conflicts",
        |c, ns| Box::pin(apply_drops_unapplied_fields_and_reports_conflicts(c, ns)),
    ),
];

/// Runs every check on a backend, reports each one's time, and fails naming the failed checks.
async fn run_suite(backend: Backend) -> anyhow::Result<()> {
    let mut failures = Vec::new();
    let mut report = format!("API checks on {backend:?}:\n");
    let suite = tokio::time::Instant::now();
    let mut in_checks = Duration::ZERO;
    for (name, check) in CHECKS {
        let (client, namespace) = backend.connect().await?;
        let started = tokio::time::Instant::now();
        let outcome = check(client, namespace).await;
        let elapsed = started.elapsed();
        in_checks += elapsed;
        writeln!(report, "  {name:<62} {elapsed:>10.1?}")?;
        if let Err(error) = outcome {
            failures.push(format!("{name}: {error:#}"));
        }
    }
    writeln!(report, "  {:<62} {in_checks:>10.1?}", "all checks")?;
    let setup = "all checks with setup (server start, namespaces)";
    write!(report, "  {setup:<62} {:>10.1?}", suite.elapsed())?;
    eprintln!("{report}");
    ensure!(
        failures.is_empty(),
        "failed checks on {backend:?}:\n{}",
        failures.join("\n")
    );
    Ok(())
}

#[tokio::test]
async fn the_api_checks_pass_on_the_fake_api_server() -> anyhow::Result<()> {
    run_suite(Backend::Fake).await
}

#[tokio::test]
async fn the_api_checks_pass_on_the_real_control_plane() -> anyhow::Result<()> {
    run_suite(Backend::ControlPlane).await
}

fn config_map(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let labels = labels
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()));
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels.collect()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

fn status_of<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> anyhow::Result<(u16, String)> {
    match result {
        Err(kube::Error::Api(status)) => Ok((status.code, status.reason)),
        other => bail!("expected an error status from the server, got {other:?}"),
    }
}

fn revision(object: &impl ResourceExt) -> anyhow::Result<u64> {
    let text = object.resource_version().context("no resourceVersion")?;
    Ok(text.parse()?)
}

async fn errors_carry_the_status_code_and_reason(client: Client, ns: String) -> anyhow::Result<()> {
    let configmaps: Api<ConfigMap> = Api::namespaced(client, &ns);
    let post = PostParams::default();
    ensure!(status_of(configmaps.get("missing").await)? == (404, "NotFound".into()));
    configmaps.create(&post, &config_map("taken", &[])).await?;
    let taken = status_of(configmaps.create(&post, &config_map("taken", &[])).await)?;
    ensure!(
        taken == (409, "AlreadyExists".into()),
        "second create gave {taken:?}"
    );
    let invalid = status_of(configmaps.create(&post, &config_map("Bad_Name", &[])).await)?;
    ensure!(
        invalid == (422, "Invalid".into()),
        "invalid name gave {invalid:?}"
    );
    Ok(())
}

async fn list_filters_by_selectors_and_pages(client: Client, ns: String) -> anyhow::Result<()> {
    let configmaps: Api<ConfigMap> = Api::namespaced(client, &ns);
    for (name, tier) in [
        ("a", "web"),
        ("b", "db"),
        ("c", "web"),
        ("d", "cache"),
        ("e", ""),
    ] {
        let labels: &[(&str, &str)] = if tier.is_empty() {
            &[]
        } else {
            &[("tier", tier)]
        };
        configmaps
            .create(&PostParams::default(), &config_map(name, labels))
            .await?;
    }
    let names = |params: ListParams| {
        let configmaps = configmaps.clone();
        async move {
            let list = configmaps.list(&params).await?;
            anyhow::Ok(
                list.items
                    .iter()
                    .map(ResourceExt::name_any)
                    .collect::<Vec<_>>(),
            )
        }
    };
    // Real namespaces hold a kube-root-ca.crt ConfigMap from 1.20 on; selectors keep it out.
    let cases = [
        ("tier=web", "", vec!["a", "c"]),
        ("tier!=web,tier", "", vec!["b", "d"]),
        ("tier in (db,cache)", "", vec!["b", "d"]),
        ("tier,tier notin (web)", "", vec!["b", "d"]),
        ("!tier", "metadata.name=e", vec!["e"]),
        ("tier", "metadata.name!=a", vec!["b", "c", "d"]),
    ];
    for (labels, fields, expected) in cases {
        let mut params = ListParams::default().labels(labels);
        if !fields.is_empty() {
            params = params.fields(fields);
        }
        let got = names(params).await?;
        ensure!(
            got == expected,
            "{labels} / {fields}: expected {expected:?}, got {got:?}"
        );
    }
    let mut pages = Vec::new();
    let mut params = ListParams::default().labels("tier").limit(2);
    loop {
        let page = configmaps.list(&params).await?;
        ensure!(
            page.metadata.resource_version.is_some(),
            "a list page has no resourceVersion"
        );
        pages.push(
            page.items
                .iter()
                .map(ResourceExt::name_any)
                .collect::<Vec<_>>(),
        );
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    // Objects left in the key range that do not match ("e") make the real server hand out one
    // more, empty, page; the fake does the same.
    ensure!(
        pages == [vec!["a", "b"], vec!["c", "d"], vec![]],
        "pages were {pages:?}"
    );
    Ok(())
}

async fn a_stale_update_is_a_409_conflict(client: Client, ns: String) -> anyhow::Result<()> {
    let configmaps: Api<ConfigMap> = Api::namespaced(client, &ns);
    let created = configmaps
        .create(&PostParams::default(), &config_map("cm", &[]))
        .await?;
    let mut fresh = created.clone();
    fresh.data = Some([("k".to_owned(), "1".to_owned())].into());
    let updated = configmaps
        .replace("cm", &PostParams::default(), &fresh)
        .await?;
    ensure!(
        revision(&updated)? > revision(&created)?,
        "the update kept the resourceVersion"
    );
    let mut stale = created;
    stale.data = Some([("k".to_owned(), "2".to_owned())].into());
    match configmaps
        .replace("cm", &PostParams::default(), &stale)
        .await
    {
        Err(kube::Error::Api(status)) if status.code == 409 && status.reason == "Conflict" => {
            ensure!(
                status.message.contains("the object has been modified"),
                "{status:?}"
            );
        }
        other => bail!("a stale update must be a 409 Conflict, got {other:?}"),
    }
    Ok(())
}

async fn merge_and_apply_patches_merge(client: Client, ns: String) -> anyhow::Result<()> {
    let configmaps: Api<ConfigMap> = Api::namespaced(client, &ns);
    let mut initial = config_map("cm", &[]);
    initial.data = Some([("keep".to_owned(), "1".to_owned())].into());
    configmaps.create(&PostParams::default(), &initial).await?;
    let merge = Patch::Merge(json!({ "data": { "added": "2" } }));
    let merged = configmaps
        .patch("cm", &PatchParams::default(), &merge)
        .await?;
    let data = merged.data.unwrap_or_default();
    ensure!(
        data.get("keep").map(String::as_str) == Some("1"),
        "merge lost a key: {data:?}"
    );
    ensure!(
        data.get("added").map(String::as_str) == Some("2"),
        "merge missed: {data:?}"
    );

    let apply = PatchParams::apply("conformance");
    let applied = json!({ "apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": { "name": "applied" }, "data": { "x": "1" } });
    let created = configmaps
        .patch("applied", &apply, &Patch::Apply(&applied))
        .await?;
    ensure!(created.uid().is_some(), "apply did not create the object");
    let changed = json!({ "apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": { "name": "applied" }, "data": { "x": "2" } });
    let reapplied = configmaps
        .patch("applied", &apply, &Patch::Apply(&changed))
        .await?;
    ensure!(
        reapplied.uid() == created.uid(),
        "re-apply replaced the object"
    );
    let x = reapplied.data.unwrap_or_default().remove("x");
    ensure!(
        x.as_deref() == Some("2"),
        "re-apply did not change x: {x:?}"
    );
    Ok(())
}

/// A Deployment the real server accepts; no controller runs, so nothing else touches it.
fn deployment(name: &str) -> anyhow::Result<Deployment> {
    Ok(serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": "main", "image": "app:1" }] },
            },
        },
    }))?)
}

// Custom resources are left out: the local kube-apiserver v1.20.2 (built with Go 1.19) crashes
// with SIGSEGV in json-iterator when a custom resource is created. Deployments have both a
// status subresource and a generation; the fake's custom-resource paths are unit-tested.
async fn the_status_subresource_is_separate(client: Client, ns: String) -> anyhow::Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client, &ns);
    let mut with_status = deployment("d")?;
    with_status.status = Some(DeploymentStatus {
        replicas: Some(5),
        ..DeploymentStatus::default()
    });
    let created = deployments
        .create(&PostParams::default(), &with_status)
        .await?;
    let replicas = created.status.as_ref().and_then(|status| status.replicas);
    ensure!(
        replicas.is_none(),
        "create kept the status: {:?}",
        created.status
    );
    let spec_of = |d: &Deployment| d.spec.replicas;
    let observed = |d: &Deployment| d.status.as_ref().and_then(|s| s.observed_generation);

    let both = json!({ "spec": { "replicas": 4 }, "status": { "observedGeneration": 1 } });
    let after_status = deployments
        .patch_status("d", &PatchParams::default(), &Patch::Merge(&both))
        .await?;
    ensure!(
        spec_of(&after_status) == spec_of(&created),
        "a status patch changed the spec"
    );
    ensure!(
        observed(&after_status) == Some(1),
        "the status patch was not applied"
    );

    let main = json!({ "spec": { "replicas": 2 }, "status": { "observedGeneration": 7 } });
    let after_main = deployments
        .patch("d", &PatchParams::default(), &Patch::Merge(&main))
        .await?;
    ensure!(
        spec_of(&after_main) == Some(2),
        "a main patch did not change the spec"
    );
    ensure!(
        observed(&after_main) == Some(1),
        "a main patch changed the status"
    );
    Ok(())
}

async fn generation_follows_spec_changes_only(client: Client, ns: String) -> anyhow::Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client, &ns);
    let created = deployments
        .create(&PostParams::default(), &deployment("d")?)
        .await?;
    let params = PatchParams::default();
    let labels = Patch::Merge(json!({ "metadata": { "labels": { "x": "y" } } }));
    let relabelled = deployments.patch("d", &params, &labels).await?;
    let status = Patch::Merge(json!({ "status": { "observedGeneration": 1 } }));
    let restatused = deployments.patch_status("d", &params, &status).await?;
    let spec = Patch::Merge(json!({ "spec": { "replicas": 3 } }));
    let respecced = deployments.patch("d", &params, &spec).await?;
    let generations =
        [&created, &relabelled, &restatused, &respecced].map(|d| d.metadata.generation);
    ensure!(
        generations == [Some(1), Some(1), Some(1), Some(2)],
        "generations after create, label, status, spec: {generations:?}"
    );
    Ok(())
}

async fn finalizers_delay_deletion(client: Client, ns: String) -> anyhow::Result<()> {
    let configmaps: Api<ConfigMap> = Api::namespaced(client, &ns);
    let mut held = config_map("held", &[]);
    held.metadata.finalizers = Some(vec!["conformance.kubeward.dev/hold".into()]);
    configmaps.create(&PostParams::default(), &held).await?;
    configmaps.delete("held", &DeleteParams::default()).await?;
    let deleting = configmaps.get("held").await?;
    ensure!(
        deleting.metadata.deletion_timestamp.is_some(),
        "no deletionTimestamp"
    );
    let release = Patch::Merge(json!({ "metadata": { "finalizers": null } }));
    configmaps
        .patch("held", &PatchParams::default(), &release)
        .await?;
    wait_for(
        Duration::from_secs(10),
        "the released object to be gone",
        || {
            let configmaps = configmaps.clone();
            async move {
                configmaps
                    .get_opt("held")
                    .await
                    .ok()
                    .filter(Option::is_none)
            }
        },
    )
    .await?;
    Ok(())
}

/// The next ADDED/MODIFIED/DELETED event as (type, name), skipping bookmarks.
async fn next_change<S>(events: &mut S) -> anyhow::Result<(&'static str, String)>
where
    S: futures::Stream<Item = Result<WatchEvent<ConfigMap>, kube::Error>> + Unpin,
{
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .context("no watch event within 10 s")??;
        return Ok(match event {
            Some(WatchEvent::Added(object)) => ("ADDED", object.name_any()),
            Some(WatchEvent::Modified(object)) => ("MODIFIED", object.name_any()),
            Some(WatchEvent::Deleted(object)) => ("DELETED", object.name_any()),
            Some(WatchEvent::Bookmark(_)) => continue,
            Some(WatchEvent::Error(status)) => bail!("watch error {status:?}"),
            None => bail!("the watch ended"),
        });
    }
}

async fn a_watch_from_a_resource_version_sees_later_events(
    client: Client,
    ns: String,
) -> anyhow::Result<()> {
    let configmaps: Api<ConfigMap> = Api::namespaced(client, &ns);
    let post = PostParams::default();
    let before = configmaps.create(&post, &config_map("before", &[])).await?;
    let from = before.resource_version().context("no resourceVersion")?;
    configmaps.create(&post, &config_map("after", &[])).await?;
    configmaps
        .delete("before", &DeleteParams::default())
        .await?;
    let mut events = configmaps
        .watch(&WatchParams::default(), &from)
        .await?
        .boxed();
    let first = next_change(&mut events).await?;
    let second = next_change(&mut events).await?;
    ensure!(
        [first.clone(), second.clone()]
            == [
                ("ADDED", "after".to_owned()),
                ("DELETED", "before".to_owned())
            ],
        "events after {from}: {first:?}, {second:?}"
    );
    Ok(())
}

async fn a_watcher_lists_then_follows_changes(client: Client, ns: String) -> anyhow::Result<()> {
    use kube::runtime::watcher::{self, Event};
    let configmaps: Api<ConfigMap> = Api::namespaced(client, &ns);
    configmaps
        .create(&PostParams::default(), &config_map("listed", &[("t", "1")]))
        .await?;
    let config = watcher::Config::default().labels("t");
    let mut events = watcher::watcher(configmaps.clone(), config).boxed();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .context("no watcher event within 10 s")??
            .context("the watcher ended")?;
        match event {
            Event::InitApply(object) | Event::Apply(object) => seen.push(object.name_any()),
            Event::InitDone => {
                let watched = config_map("watched", &[("t", "1")]);
                configmaps.create(&PostParams::default(), &watched).await?;
            }
            Event::Init | Event::Delete(_) => {}
        }
    }
    ensure!(seen == ["listed", "watched"], "the watcher saw {seen:?}");
    Ok(())
}

async fn create_and_update_fill_in_server_fields(client: Client, ns: String) -> anyhow::Result<()> {
    let configmaps: Api<ConfigMap> = Api::namespaced(client, &ns);
    let mut generated = config_map("", &[]);
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let first = configmaps
        .create(&PostParams::default(), &generated)
        .await?;
    let second = configmaps
        .create(&PostParams::default(), &generated)
        .await?;
    let (a, b) = (first.name_any(), second.name_any());
    ensure!(
        a.starts_with("gen-") && a.len() == 9 && a != b,
        "generated names {a}, {b}"
    );
    ensure!(first.uid().is_some() && first.uid() != second.uid(), "uids");
    ensure!(
        first.metadata.creation_timestamp.is_some(),
        "no creationTimestamp"
    );
    ensure!(
        revision(&second)? > revision(&first)?,
        "resourceVersions do not increase"
    );

    let mut unconditional = first.clone();
    unconditional.metadata.resource_version = None;
    unconditional.data = Some([("k".to_owned(), "v".to_owned())].into());
    let updated = configmaps
        .replace(&a, &PostParams::default(), &unconditional)
        .await?;
    ensure!(
        revision(&updated)? > revision(&second)?,
        "an update without a resourceVersion"
    );
    let same = Patch::Merge(json!({ "data": { "k": "v" } }));
    let unchanged = configmaps.patch(&a, &PatchParams::default(), &same).await?;
    ensure!(
        unchanged.resource_version() == updated.resource_version(),
        "a no-op patch changed the resourceVersion"
    );
    Ok(())
}

async fn a_selected_watch_sees_objects_enter_and_leave(
    client: Client,
    ns: String,
) -> anyhow::Result<()> {
    let configmaps: Api<ConfigMap> = Api::namespaced(client, &ns);
    let created = configmaps
        .create(&PostParams::default(), &config_map("x", &[]))
        .await?;
    let from = created.resource_version().context("no resourceVersion")?;
    let label = |tier: &str| Patch::Merge(json!({ "metadata": { "labels": { "tier": tier } } }));
    configmaps
        .patch("x", &PatchParams::default(), &label("web"))
        .await?;
    configmaps
        .patch("x", &PatchParams::default(), &label("web2"))
        .await?;
    configmaps
        .patch("x", &PatchParams::default(), &label("db"))
        .await?;
    let params = WatchParams::default().labels("tier in (web,web2)");
    let mut events = configmaps.watch(&params, &from).await?.boxed();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(next_change(&mut events).await?.0);
    }
    ensure!(seen == ["ADDED", "MODIFIED", "DELETED"], "events: {seen:?}");
    Ok(())
}

async fn deletion_with_finalizers_is_watched_as_modified_then_deleted(
    client: Client,
    ns: String,
) -> anyhow::Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client, &ns);
    let mut held = deployment("held")?;
    held.metadata.finalizers = Some(vec!["conformance.kubeward.dev/hold".into()]);
    let created = deployments.create(&PostParams::default(), &held).await?;
    let from = created.resource_version().context("no resourceVersion")?;
    deployments.delete("held", &DeleteParams::default()).await?;
    let deleting = deployments.get("held").await?;
    ensure!(
        deleting.metadata.generation == Some(2),
        "marking for deletion gave generation {:?}",
        deleting.metadata.generation
    );
    let release = Patch::Merge(json!({ "metadata": { "finalizers": null } }));
    deployments
        .patch("held", &PatchParams::default(), &release)
        .await?;
    let params = WatchParams::default().fields("metadata.name=held");
    let mut events = deployments.watch(&params, &from).await?.boxed();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .context("no watch event within 10 s")??
            .context("the watch ended")?;
        match event {
            WatchEvent::Modified(d) => {
                seen.push(("MODIFIED", d.metadata.deletion_timestamp.is_some()));
            }
            WatchEvent::Deleted(d) => {
                seen.push(("DELETED", d.metadata.deletion_timestamp.is_some()));
            }
            WatchEvent::Bookmark(_) => {}
            other => bail!("unexpected event {other:?}"),
        }
    }
    ensure!(
        seen == [("MODIFIED", true), ("DELETED", true)],
        "events: {seen:?}"
    );
    Ok(())
}

async fn apply_drops_unapplied_fields_and_reports_conflicts(
    client: Client,
    ns: String,
) -> anyhow::Result<()> {
    let configmaps: Api<ConfigMap> = Api::namespaced(client, &ns);
    let config = |data: serde_json::Value| {
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "cm" },
                "data": data })
    };
    let first = PatchParams::apply("first");
    let both = config(json!({ "x": "1", "y": "2" }));
    configmaps.patch("cm", &first, &Patch::Apply(&both)).await?;
    let only_x = config(json!({ "x": "1" }));
    let reapplied = configmaps
        .patch("cm", &first, &Patch::Apply(&only_x))
        .await?;
    let keys: Vec<String> = reapplied.data.unwrap_or_default().into_keys().collect();
    ensure!(
        keys == ["x"],
        "after re-applying without y the keys are {keys:?}"
    );

    let second = PatchParams::apply("second");
    let other_x = config(json!({ "x": "9" }));
    match configmaps
        .patch("cm", &second, &Patch::Apply(&other_x))
        .await
    {
        Err(kube::Error::Api(status)) if status.code == 409 && status.reason == "Conflict" => {}
        other => bail!("applying another manager's field must conflict, got {other:?}"),
    }
    let same_x = config(json!({ "x": "1", "z": "3" }));
    configmaps
        .patch("cm", &second, &Patch::Apply(&same_x))
        .await?;
    let forced = configmaps
        .patch("cm", &second.clone().force(), &Patch::Apply(&other_x))
        .await?;
    let data = forced.data.unwrap_or_default();
    ensure!(
        data.get("x").map(String::as_str) == Some("9") && !data.contains_key("z"),
        "a forced apply gave {data:?}"
    );
    Ok(())
}
