//! The three sides compared: kube-runtime's `Controller`, kubeward with fencing off, and on.
//!
//! Each runs the same [`workload::reconcile`] at concurrency 1 (kubeward's default) on one
//! namespace. Its informer's client goes through a [`TcpProxy`] holding what kube-apiserver
//! sends for the delay; its writes go through the direct client, so only the cache lags.
//! A failed reconcile is retried after 5 ms, doubling per failure: kubeward's default rate
//! limiter, written by hand for kube-runtime (whose error policy is the user's).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::core::{Expression, Selector};
use kube::runtime::controller::{
    Action as KrAction, Config as KrConfig, Controller as KrController,
};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, ResourceExt as _};
use kubeward::controller::{Action, Cluster, Context, Controller, Reconciler};
use kubeward::informer::Factory;
use kubeward::testing::{ControlPlane, TcpProxy};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::workload::{self, Cache, Log, Workload};

/// A controller compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// kube-runtime's `Controller` reading its reflector store (no fencing).
    KubeRuntime,
    /// kubeward with `Controller::read_your_writes(false)`.
    Unfenced,
    /// kubeward with fenced reads (the default).
    Fenced,
}

impl Side {
    /// Every side, in the table's order.
    pub const ALL: [Side; 3] = [Side::KubeRuntime, Side::Unfenced, Side::Fenced];

    /// The side's name in the table.
    pub fn label(self) -> &'static str {
        match self {
            Side::KubeRuntime => "kube-runtime",
            Side::Unfenced => "kubeward, fencing off",
            Side::Fenced => "kubeward, fencing on",
        }
    }
}

/// Runs `side` with `workload` on `ns`, watches `delay` late, while `drive` runs; stops it after.
pub async fn with_side<T>(
    side: Side,
    cp: &ControlPlane,
    ns: &str,
    delay: Duration,
    workload: Workload,
    log: &Arc<Log>,
    drive: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    proxy.delay(delay);
    let watching = cp.client_through(&proxy);
    let writing = Api::namespaced(cp.client(), ns);
    match side {
        Side::KubeRuntime => kube_runtime(watching, writing, workload, log, drive).await,
        Side::Unfenced | Side::Fenced => {
            let fenced = side == Side::Fenced;
            kubeward(watching, cp.client(), ns, fenced, workload, log, drive).await
        }
    }
}

/// kubeward's reconciler: the workload over the `Context`'s cached reads and client.
struct Kubeward {
    namespace: String,
    workload: Workload,
    log: Arc<Log>,
}

/// kubeward's cached reads, through the `Context` (fenced when the controller is).
struct ContextCache<'a> {
    ctx: &'a Context<ConfigMap>,
    namespace: &'a str,
}

impl Cache for ContextCache<'_> {
    async fn copies(&self, source: &str) -> kube::Result<usize> {
        let copy_of: Selector = Expression::Equal("copy-of".into(), source.into()).into();
        let copies = self.ctx.list::<ConfigMap>(Some(self.namespace), &copy_of);
        Ok(copies.await?.len())
    }

    async fn get(&self, name: &str) -> kube::Result<Option<Arc<ConfigMap>>> {
        self.ctx.get::<ConfigMap>(Some(self.namespace), name).await
    }
}

impl Reconciler<ConfigMap> for Kubeward {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        source: Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> kube::Result<Action> {
        let cache = ContextCache {
            ctx,
            namespace: &self.namespace,
        };
        let api = Api::namespaced(ctx.client(), &self.namespace);
        workload::reconcile(self.workload, &source, &cache, &api, &self.log).await?;
        Ok(Action::await_change())
    }
}

async fn kubeward<T>(
    watching: Client,
    writing: Client,
    ns: &str,
    fenced: bool,
    workload: Workload,
    log: &Arc<Log>,
    drive: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let factory = Arc::new(Factory::new(watching));
    let cluster = Cluster::new(Arc::clone(&factory))
        .namespace(Some(ns.to_owned()))
        .client(writing);
    let reconciler = Kubeward {
        namespace: ns.to_owned(),
        workload,
        log: Arc::clone(log),
    };
    let bound = Controller::new(reconciler)
        .read_your_writes(fenced)
        .bind(&cluster)?;
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let run = tokio::spawn(async move { bound.run(stop.cancelled_owned()).await });
    let driven = drive.await;
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(30), run).await???;
    factory.shutdown().await;
    driven
}

/// kube-runtime's side: its context, with the failures per source for the backoff.
struct Runtime {
    workload: Workload,
    store: Store<ConfigMap>,
    api: Api<ConfigMap>,
    log: Arc<Log>,
    failures: Mutex<HashMap<String, u32>>,
}

/// kube-runtime's cached reads: its reflector store.
struct StoreCache<'a> {
    store: &'a Store<ConfigMap>,
    namespace: String,
}

impl Cache for StoreCache<'_> {
    async fn copies(&self, source: &str) -> kube::Result<usize> {
        let state = self.store.state();
        let copies = state
            .iter()
            .filter(|cm| cm.labels().get("copy-of").map(String::as_str) == Some(source));
        Ok(copies.count())
    }

    async fn get(&self, name: &str) -> kube::Result<Option<Arc<ConfigMap>>> {
        Ok(self
            .store
            .get(&ObjectRef::new(name).within(&self.namespace)))
    }
}

async fn kube_runtime<T>(
    watching: Client,
    writing: Api<ConfigMap>,
    workload: Workload,
    log: &Arc<Log>,
    drive: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let ns = writing.namespace().unwrap_or_default().to_owned();
    let watched: Api<ConfigMap> = Api::namespaced(watching, &ns);
    let controller = KrController::new(watched, watcher::Config::default())
        .with_config(KrConfig::default().concurrency(1));
    let context = Arc::new(Runtime {
        workload,
        store: controller.store(),
        api: writing,
        log: Arc::clone(log),
        failures: Mutex::default(),
    });
    let run = controller.run(
        |source: Arc<ConfigMap>, ctx: Arc<Runtime>| async move {
            let cache = StoreCache {
                store: &ctx.store,
                namespace: source.namespace().unwrap_or_default(),
            };
            workload::reconcile(ctx.workload, &source, &cache, &ctx.api, &ctx.log).await?;
            ctx.failures.lock().remove(&source.name_any());
            Ok::<_, kube::Error>(KrAction::await_change())
        },
        |source: Arc<ConfigMap>, _: &kube::Error, ctx: Arc<Runtime>| {
            let mut failures = ctx.failures.lock();
            let failed = failures.entry(source.name_any()).or_default();
            let backoff = Duration::from_millis(5) * 2u32.pow((*failed).min(16));
            *failed += 1;
            KrAction::requeue(backoff)
        },
        context,
    );
    let task = tokio::spawn(run.for_each(|_| async {}));
    let driven = drive.await;
    task.abort();
    let _ = task.await;
    driven
}
