//! The reconcile kit on the real control plane: owned objects, pruning, status, conditions, RBAC.
//!
//! A `Bundle` asks for one ConfigMap per name in its spec; the test controller applies them
//! with `ctx.apply`, prunes the rest with `ctx.prune`, sets `Ready` and writes status with
//! `ctx.patch_status`, and records what each reconcile did.

use crate::fixtures::watching;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client, CustomResource, ResourceExt};
use kubeward::cache::ObjectKey;
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::manager::Manager;
use kubeward::reconcile::{Condition, ConditionStatus, Conditions, NewCondition as _, Operation};
use kubeward::testing::{ControlPlane, install_crd, wait_for};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod owned;
mod rbac;
mod reads;
mod report;
mod status;

/// How long the controller may take to react to a change.
const REACT: Duration = Duration::from_secs(30);

/// Asks for one ConfigMap per name in `children`, each holding `content`.
#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kit.kubeward.dev",
    version = "v1",
    kind = "Bundle",
    namespaced,
    status = "BundleStatus"
)]
pub(crate) struct BundleSpec {
    /// The names of the ConfigMaps to produce.
    pub(crate) children: Vec<String>,
    /// What each ConfigMap's `content` key holds.
    pub(crate) content: String,
}

/// What the controller observed.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BundleStatus {
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) observed_generation: Option<i64>,
    /// `Ready` when every ConfigMap is applied.
    #[serde(default)]
    pub(crate) conditions: Conditions,
}

/// What one reconcile did.
#[derive(Clone, Debug)]
pub(crate) struct Done {
    /// The annotation `kit/round` of the object reconciled, to tell reconciles apart.
    pub(crate) round: Option<String>,
    /// Whether `patch_status` wrote.
    pub(crate) wrote_status: bool,
    /// What each `apply` did, in the order of the children.
    pub(crate) applied: Vec<Operation>,
    /// What `prune` deleted.
    pub(crate) pruned: Vec<ObjectKey>,
}

/// The test controller's reconciler: records every outcome and every error message.
#[derive(Clone, Default)]
pub(crate) struct Kit {
    pub(crate) done: Arc<Mutex<Vec<Done>>>,
    pub(crate) errors: Arc<Mutex<Vec<String>>>,
}

impl Reconciler<Bundle> for Kit {
    type Error = kubeward::Error;

    async fn reconcile(
        &self,
        bundle: Arc<Bundle>,
        ctx: &Context<Bundle>,
    ) -> Result<Action, kubeward::Error> {
        let outcome = self.produce(&bundle, ctx).await;
        match outcome {
            Ok(done) => {
                self.done.lock().push(done);
                Ok(Action::await_change())
            }
            Err(error) => {
                self.errors.lock().push(error.to_string());
                Err(error)
            }
        }
    }
}

impl Kit {
    async fn produce(
        &self,
        bundle: &Bundle,
        ctx: &Context<Bundle>,
    ) -> Result<Done, kubeward::Error> {
        let names: Vec<&str> = bundle.spec.children.iter().map(String::as_str).collect();
        let mut applied = Vec::new();
        for name in &names {
            let written = ctx.apply(bundle, child(name, &bundle.spec.content)).await?;
            applied.push(written.operation());
        }
        let pruned = ctx.prune::<ConfigMap>(bundle, &names).await?;
        let mut status = bundle.status.clone().unwrap_or_default();
        status.observed_generation = bundle.metadata.generation;
        // An empty message for no children: `metav1.Condition` allows it, and it must survive
        // the status write.
        let mut ready = Condition::new("Ready", ConditionStatus::True, "Applied", names.join(", "));
        ready.observed_generation = bundle.metadata.generation;
        status.conditions.set(ready);
        let wrote_status = ctx.patch_status(bundle, &status).await?.changed();
        Ok(Done {
            round: bundle.annotations().get("kit/round").cloned(),
            wrote_status,
            applied,
            pruned,
        })
    }
}

/// The ConfigMap `name` the controller produces.
pub(crate) fn child(name: &str, content: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([("kit".to_owned(), "child".to_owned())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("content".to_owned(), content.to_owned())])),
        ..ConfigMap::default()
    }
}

pub(crate) fn bundle(name: &str, children: &[&str]) -> Bundle {
    let mut bundle = Bundle::new(
        name,
        BundleSpec {
            children: children.iter().map(|c| (*c).to_owned()).collect(),
            content: "kit".into(),
        },
    );
    bundle.metadata.name = Some(name.to_owned());
    bundle
}

/// Requests a client sent: writes (every request but GET) as `METHOD path`, or reads (GETs,
/// watches included) as `path?query`.
#[derive(Clone, Default)]
pub(crate) struct Sent(Arc<Mutex<Vec<String>>>);

impl Sent {
    /// The requests so far whose path (and query, for reads) contains `fragment`.
    pub(crate) fn to(&self, fragment: &str) -> Vec<String> {
        self.0
            .lock()
            .iter()
            .filter(|w| w.contains(fragment))
            .cloned()
            .collect()
    }

    /// Every write so far but Events.
    pub(crate) fn all_but_events(&self) -> Vec<String> {
        self.0
            .lock()
            .iter()
            .filter(|w| !w.contains("/events"))
            .cloned()
            .collect()
    }
}

/// A client service that records each request, then sends it through `inner`.
#[derive(Clone)]
struct Counting {
    inner: Client,
    writes: Sent,
    reads: Sent,
}

type Request = http::Request<kube::client::Body>;
type Response = http::Response<kube::client::Body>;

impl tower_service::Service<Request> for Counting {
    type Response = Response;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response, kube::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), kube::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let uri = request.uri();
        if request.method() == http::Method::GET {
            let read = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
            self.reads.0.lock().push(read.to_owned());
        } else {
            let write = format!("{} {}", request.method(), uri.path());
            self.writes.0.lock().push(write);
        }
        let inner = self.inner.clone();
        Box::pin(async move { inner.send(request).await })
    }
}

/// An admin client that records its writes and its reads in the returned logs.
pub(crate) fn counting_client(cp: &ControlPlane) -> (Client, Sent, Sent) {
    let (writes, reads) = (Sent::default(), Sent::default());
    let service = Counting {
        inner: cp.client(),
        writes: writes.clone(),
        reads: reads.clone(),
    };
    (Client::new(service, "default"), writes, reads)
}

/// A running manager with the test controller, watching `ns` only.
pub(crate) struct Running {
    pub(crate) kit: Kit,
    token: CancellationToken,
    run: JoinHandle<kubeward::manager::Result<()>>,
}

impl Running {
    pub(crate) fn start(client: Client, ns: &str) -> Self {
        let kit = Kit::default();
        let manager = Manager::new(client, watching(ns.to_owned()))
            .expect("a manager builds for a client given");
        manager
            .add(Controller::new(kit.clone()).owns::<ConfigMap>())
            .expect("the test manager takes it");
        let token = manager.shutdown_token();
        let run = tokio::spawn(manager.run());
        Self { kit, token, run }
    }

    /// Waits for a reconcile of round `round` (the `kit/round` annotation) and returns it.
    pub(crate) async fn reconciled(&self, round: &str) -> anyhow::Result<Done> {
        let what = format!("a reconcile of round {round}");
        Ok(wait_for(REACT, &what, || async {
            let done = self.kit.done.lock();
            done.iter()
                .rev()
                .find(|d| d.round.as_deref() == Some(round))
                .cloned()
        })
        .await?)
    }

    pub(crate) async fn stop(self) -> anyhow::Result<()> {
        self.token.cancel();
        tokio::time::timeout(REACT, self.run)
            .await??
            .map_err(Into::into)
    }
}

/// A fresh namespace with the Bundle CRD installed, and the Bundles API in it.
pub(crate) async fn namespace(
    cp: &ControlPlane,
    prefix: &str,
) -> anyhow::Result<(String, Api<Bundle>)> {
    install_crd::<Bundle>(cp.client()).await?;
    let ns = cp.create_namespace(prefix).await?;
    Ok((ns.clone(), Api::namespaced(cp.client(), &ns)))
}

/// Creates `bundle` and waits until the controller reports it Ready.
pub(crate) async fn create_ready(bundles: &Api<Bundle>, bundle: &Bundle) -> anyhow::Result<Bundle> {
    bundles.create(&PostParams::default(), bundle).await?;
    wait_ready(bundles, &bundle.name_any()).await
}

/// Waits until `name` is Ready with reason `Applied` for its current generation.
pub(crate) async fn wait_ready(bundles: &Api<Bundle>, name: &str) -> anyhow::Result<Bundle> {
    let what = format!("bundle {name} Ready (reason Applied) for its generation");
    Ok(wait_for(REACT, &what, || async {
        let bundle = bundles.get(name).await.ok()?;
        let conditions = &bundle.status.as_ref()?.conditions;
        let ready = conditions.find("Ready")?;
        (conditions.is_true("Ready")
            && ready.reason == "Applied"
            && ready.observed_generation == bundle.metadata.generation)
            .then_some(bundle)
    })
    .await?)
}
