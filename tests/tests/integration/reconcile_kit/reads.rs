//! `ctx.get` and `ctx.list`: a kind the controller owns is read from its cache with no request
//! to the API server; a kind nothing caches is read from the API server; both are counted.

use crate::fixtures::watching;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::Patch;
use kube::api::PatchParams;
use kube::core::{Expression, Selector};
use kubeward_tests::metric_sum;

use super::*;

const CONTROLLER: &str = "reads";

/// What one reconcile read, each as the names it found.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Read {
    cached: Option<String>,
    missing: Option<String>,
    listed: Vec<String>,
    live: Option<String>,
}

/// Reads a Secret it owns by name and by label, a missing one, and a ServiceAccount, which
/// nothing caches.
#[derive(Clone, Default)]
struct Reader(Arc<Mutex<Vec<Read>>>);

impl Reconciler<ConfigMap> for Reader {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> Result<Action, kube::Error> {
        let ns = cm.metadata.namespace.as_deref();
        let name = |obj: Option<Arc<Secret>>| obj.map(|o| o.name_any());
        let web: Selector = Expression::Equal("app".into(), "web".into()).into();
        let read = Read {
            cached: name(ctx.get::<Secret>(ns, "web").await?),
            missing: name(ctx.get::<Secret>(ns, "absent").await?),
            listed: ctx
                .list::<Secret>(ns, &web)
                .await?
                .iter()
                .map(|s| s.name_any())
                .collect(),
            live: ctx
                .get::<ServiceAccount>(ns, "robot")
                .await?
                .map(|s| s.name_any()),
        };
        self.0.lock().push(read);
        Ok(Action::await_change())
    }
}

fn labelled(name: &str, app: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        labels: Some(BTreeMap::from([("app".to_owned(), app.to_owned())])),
        ..ObjectMeta::default()
    }
}

/// How many reconciles the test waits for, each after a change of the ConfigMap.
const ROUNDS: usize = 3;

/// Makes Secrets `web` (labelled `app=web`) and `db`, ServiceAccount `robot` and ConfigMap
/// `subject` in `ns`; returns the ConfigMaps' API.
async fn objects(admin: Client, ns: &str) -> anyhow::Result<Api<ConfigMap>> {
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), ns);
    for (name, app) in [("web", "web"), ("db", "db")] {
        let secret = Secret {
            metadata: labelled(name, app),
            ..Secret::default()
        };
        secrets.create(&PostParams::default(), &secret).await?;
    }
    let robot = ServiceAccount {
        metadata: labelled("robot", "web"),
        ..ServiceAccount::default()
    };
    Api::<ServiceAccount>::namespaced(admin.clone(), ns)
        .create(&PostParams::default(), &robot)
        .await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(admin, ns);
    config_maps
        .create(&PostParams::default(), &child("subject", "0"))
        .await?;
    Ok(config_maps)
}

#[tokio::test]
async fn reads_of_an_owned_kind_come_from_the_cache_without_a_request_and_others_from_the_api()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("reads").await?;
    let config_maps = objects(cp.client(), &ns).await?;

    let (client, _, reads) = counting_client(cp);
    let reader = Reader::default();
    let manager = Manager::new(client, watching(ns.clone()))?;
    let registry = manager.registry().clone();
    manager.add(
        Controller::new(reader.clone())
            .name(CONTROLLER)
            .owns::<Secret>(),
    )?;
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());

    for round in 1..ROUNDS {
        wait_for(REACT, &format!("{round} reconciles"), || async {
            (reader.0.lock().len() >= round).then_some(())
        })
        .await?;
        let patch =
            serde_json::json!({ "metadata": { "annotations": { "round": round.to_string() } } });
        config_maps
            .patch("subject", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    wait_for(REACT, "the last reconcile", || async {
        (reader.0.lock().len() >= ROUNDS).then_some(())
    })
    .await?;
    token.cancel();
    tokio::time::timeout(REACT, run).await???;

    let expected = Read {
        cached: Some("web".into()),
        missing: None,
        listed: vec!["web".into()],
        live: Some("robot".into()),
    };
    let done = reader.0.lock().clone();
    assert!(done.iter().all(|r| *r == expected), "{done:#?}");

    // The Secrets' only reads on the wire are the informer's list and watches; the
    // ServiceAccount was fetched once per reconcile.
    let secret_reads: Vec<String> = reads
        .to("/secrets")
        .into_iter()
        .filter(|r| !r.contains("watch=true"))
        .collect();
    let lists = format!("/api/v1/namespaces/{ns}/secrets?");
    assert!(
        secret_reads.len() == 1 && secret_reads[0].starts_with(&lists),
        "no read of a cached Secret reached the API server, only the informer's list: {secret_reads:?}"
    );
    assert!(
        !secret_reads[0].contains("labelSelector"),
        "{secret_reads:?}"
    );
    assert_eq!(
        reads.to("/serviceaccounts/robot").len(),
        done.len(),
        "each uncached read is a request"
    );
    let count = |resource: &str, source: &str| {
        metric_sum(
            &registry,
            "kubeward_reads_total",
            ("controller", CONTROLLER),
            |m| {
                let labelled = |name: &str, value: &str| {
                    m.get_label()
                        .iter()
                        .any(|l| l.name() == name && l.value() == value)
                };
                if labelled("resource", resource) && labelled("source", source) {
                    m.get_counter().get_value()
                } else {
                    0.0
                }
            },
        )
    };
    let counts = [
        count("secrets", "cache"),
        count("secrets", "api"),
        count("serviceaccounts", "api"),
    ];
    let reconciles = done.len();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let counts = counts.map(|c| c as usize);
    assert_eq!(
        counts,
        [3 * reconciles, 0, reconciles],
        "reads by resource and source"
    );
    Ok(())
}
