//! The kit's last mile against the API server: the condition's first state (`Unknown`), the
//! one-call success written with `observedGeneration` in one status write, `Written::previous`
//! on an update, and the opt-in Events of owned-object writes.

use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kubeward::reconcile::Status;
use kubeward::testing::events_about;

use super::*;

/// Asks for one ConfigMap per name in `children`, each holding `content`, and keeps the kit's
/// [`Status`] (the generation observed and the conditions).
#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kit.kubeward.dev",
    version = "v1",
    kind = "Shelf",
    plural = "shelves",
    namespaced,
    status = "Status"
)]
pub(crate) struct ShelfSpec {
    /// The names of the ConfigMaps to produce.
    pub(crate) children: Vec<String>,
    /// What each ConfigMap's `content` key holds.
    pub(crate) content: String,
}

/// Shelf `name` asking for `children`, annotated with round `round` (and `kit/mode: quiet`
/// when `quiet`).
fn shelf(name: &str, children: &[&str], round: &str, quiet: bool) -> Shelf {
    let spec = ShelfSpec {
        children: children.iter().map(|c| (*c).to_owned()).collect(),
        content: "kit".into(),
    };
    let mut shelf = Shelf::new(name, spec);
    let annotations = shelf.metadata.annotations.get_or_insert_default();
    annotations.insert("kit/round".into(), round.into());
    if quiet {
        annotations.insert("kit/mode".into(), "quiet".into());
    }
    shelf
}

/// A fresh namespace with the Shelf CRD installed, and the Shelves API in it.
async fn shelves(cp: &ControlPlane, prefix: &str) -> anyhow::Result<(String, Api<Shelf>)> {
    install_crd::<Shelf>(cp.client()).await?;
    let ns = cp.create_namespace(prefix).await?;
    Ok((ns.clone(), Api::namespaced(cp.client(), &ns)))
}

/// Waits until shelf `name` is Ready (reason `Applied`) for its current generation.
async fn wait_ready(shelves: &Api<Shelf>, name: &str) -> anyhow::Result<Shelf> {
    let what = format!("shelf {name} Ready (reason Applied) for its generation");
    Ok(wait_for(REACT, &what, || async {
        let shelf = shelves.get(name).await.ok()?;
        let conditions = &shelf.status.as_ref()?.conditions;
        let ready = conditions.find("Ready")?;
        (conditions.is_true("Ready")
            && ready.reason == "Applied"
            && ready.observed_generation == shelf.metadata.generation)
            .then_some(shelf)
    })
    .await?)
}

/// What one reconcile of the [`Reporter`] saw.
#[derive(Clone, Debug)]
struct Seen {
    /// The `kit/round` annotation of the object reconciled.
    round: Option<String>,
    /// For each child, the `content` of the object an update replaced (`Written::previous`).
    previous: Vec<Option<String>>,
}

/// Applies the children, prunes the rest, and reports success with `ctx.succeed`, unless the
/// shelf is annotated `kit/mode: quiet` (then it writes no status).
#[derive(Clone, Default)]
struct Reporter {
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Reconciler<Shelf> for Reporter {
    type Error = kubeward::Error;

    async fn reconcile(
        &self,
        item: Arc<Shelf>,
        ctx: &Context<Shelf>,
    ) -> Result<Action, kubeward::Error> {
        let names: Vec<&str> = item.spec.children.iter().map(String::as_str).collect();
        let mut previous = Vec::new();
        for name in &names {
            let written = ctx.apply(&item, child(name, &item.spec.content)).await?;
            let content = |c: &Arc<ConfigMap>| c.data.as_ref()?.get("content").cloned();
            previous.push(written.previous().and_then(content));
        }
        ctx.prune::<ConfigMap>(&item, &names).await?;
        let annotations = item.annotations();
        if annotations.get("kit/mode").map(String::as_str) != Some("quiet") {
            ctx.succeed(&item, "Applied", names.join(", ")).await?;
        }
        self.seen.lock().push(Seen {
            round: annotations.get("kit/round").cloned(),
            previous,
        });
        Ok(Action::await_change())
    }
}

/// A manager running the [`Reporter`] on `client` in `ns`, owning ConfigMaps with owned-object
/// Events on, and with the condition's first state `initial`.
struct Reporting {
    reporter: Reporter,
    token: CancellationToken,
    run: JoinHandle<kubeward::manager::Result<()>>,
}

impl Reporting {
    fn start(client: Client, ns: &str, initial: bool) -> Self {
        let reporter = Reporter::default();
        let manager = Manager::new(client, watching(ns.to_owned()))
            .expect("a manager builds for a client given");
        let controller = Controller::new(reporter.clone())
            .owns::<ConfigMap>()
            .owned_events(true)
            .initial_condition(initial);
        manager.add(controller).expect("the test manager takes it");
        let token = manager.shutdown_token();
        let run = tokio::spawn(manager.run());
        Self {
            reporter,
            token,
            run,
        }
    }

    async fn reconciled(&self, round: &str) -> anyhow::Result<Seen> {
        let what = format!("a reconcile of round {round}");
        Ok(wait_for(REACT, &what, || async {
            let seen = self.reporter.seen.lock();
            seen.iter()
                .rev()
                .find(|s| s.round.as_deref() == Some(round))
                .cloned()
        })
        .await?)
    }

    async fn stop(self) -> anyhow::Result<()> {
        self.token.cancel();
        tokio::time::timeout(REACT, self.run)
            .await??
            .map_err(Into::into)
    }
}

/// Moves `name` to round `round`, which reconciles it.
async fn next_round(shelves: &Api<Shelf>, name: &str, round: &str) -> anyhow::Result<()> {
    let patch = serde_json::json!({ "metadata": { "annotations": { "kit/round": round } } });
    shelves
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

#[tokio::test]
async fn the_condition_starts_unknown_until_a_reconcile_reports_and_an_opt_out_leaves_it_alone()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let (ns, shelves) = shelves(cp, "kit-unknown").await?;
    let running = Reporting::start(cp.client(), &ns, true);
    let quiet = shelf("quiet", &[], "1", true);
    shelves.create(&PostParams::default(), &quiet).await?;
    let what = "Ready Unknown (Reconciling) on a shelf whose reconcile wrote no status";
    let first = wait_for(REACT, what, || async {
        let shelf = shelves.get("quiet").await.ok()?;
        let ready = shelf.status?.conditions.find("Ready").cloned()?;
        (ready.status == "Unknown").then_some(ready)
    })
    .await?;
    assert_eq!(first.reason, "Reconciling");
    assert_eq!(first.observed_generation, Some(1));
    running.stop().await?;

    // Opted out: a reconcile that writes no status leaves the condition missing. The second
    // round's reconcile starts only once the first one, with anything written after it, is done.
    let running = Reporting::start(cp.client(), &ns, false);
    let silent = shelf("silent", &[], "1", true);
    shelves.create(&PostParams::default(), &silent).await?;
    running.reconciled("1").await?;
    next_round(&shelves, "silent", "2").await?;
    running.reconciled("2").await?;
    let status = shelves.get("silent").await?.status;
    assert!(
        status.as_ref().is_none_or(|s| s.conditions.is_empty()),
        "no condition without the first state: {status:?}"
    );
    running.stop().await
}

#[tokio::test]
async fn success_lands_with_observed_generation_in_one_status_write() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let (ns, shelves) = shelves(cp, "kit-succeed").await?;
    let (client, writes, _) = counting_client(cp);
    let running = Reporting::start(client, &ns, true);
    shelves
        .create(&PostParams::default(), &shelf("web", &["a"], "1", false))
        .await?;
    running.reconciled("1").await?;
    let status_writes = || writes.to(&format!("/namespaces/{ns}/shelves/web/status"));
    let web = wait_ready(&shelves, "web").await?;
    assert_eq!(
        status_writes().len(),
        1,
        "the first state and the result in one write: {:?}",
        writes.all_but_events()
    );
    let status = web.status.clone().unwrap_or_default();
    assert_eq!(status.observed_generation, web.metadata.generation);
    assert_eq!(status.conditions.len(), 1, "{:?}", status.conditions);

    // A new generation: one write again, both generations moved.
    let spec = serde_json::json!({ "spec": { "children": ["a", "b"] } });
    shelves
        .patch("web", &PatchParams::default(), &Patch::Merge(&spec))
        .await?;
    let web = wait_ready(&shelves, "web").await?;
    assert_eq!(web.metadata.generation, Some(2));
    let status = web.status.unwrap_or_default();
    assert_eq!(status.observed_generation, Some(2));
    assert_eq!(
        status.conditions.find("Ready").map(|c| c.message.as_str()),
        Some("a, b")
    );
    assert_eq!(status_writes().len(), 2, "{:?}", status_writes());
    running.stop().await
}

#[tokio::test]
async fn an_update_carries_the_object_it_replaced_and_owned_writes_record_events()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let (ns, shelves) = shelves(cp, "kit-previous").await?;
    let running = Reporting::start(cp.client(), &ns, true);
    let web = shelves
        .create(
            &PostParams::default(),
            &shelf("web", &["a", "b"], "1", false),
        )
        .await?;
    let created = running.reconciled("1").await?;
    assert_eq!(created.previous, [None, None], "nothing replaced on create");
    wait_ready(&shelves, "web").await?;

    let patch = serde_json::json!({
        "metadata": { "annotations": { "kit/round": "2" } },
        "spec": { "children": ["a"], "content": "new" },
    });
    shelves
        .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    running.reconciled("2").await?;
    // The first reconcile of the round applied the change; later ones (the prune's delete
    // reconciles the owner again) find nothing to change.
    let first_of_round = running
        .reporter
        .seen
        .lock()
        .iter()
        .find(|s| s.round.as_deref() == Some("2"))
        .cloned();
    let updated = first_of_round.expect("round 2 was reconciled");
    assert_eq!(
        updated.previous,
        [Some("kit".to_owned())],
        "the update's previous object holds the content it replaced"
    );

    let notes = |events: &[Event], reason: &str| -> Vec<String> {
        let mut notes: Vec<String> = events
            .iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .filter_map(|e| e.note.clone())
            .collect();
        notes.sort();
        notes
    };
    let what = "Events for the ConfigMaps created, updated and deleted";
    let events = wait_for(REACT, what, || async {
        let events = events_about(cp.client(), &web).await.ok()?;
        (!notes(&events, "Deleted").is_empty() && !notes(&events, "Updated").is_empty())
            .then_some(events)
    })
    .await?;
    assert_eq!(
        notes(&events, "Created"),
        ["Created ConfigMap a", "Created ConfigMap b"]
    );
    assert_eq!(notes(&events, "Updated"), ["Updated ConfigMap a"]);
    assert_eq!(notes(&events, "Deleted"), ["Deleted ConfigMap b"]);
    running.stop().await
}
