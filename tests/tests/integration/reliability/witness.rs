//! Watches reconciles and checks, after each fault, that nothing was lost and the operator lives.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kube::api::ListParams;
use kube::{Api, Client, Resource, ResourceExt};
use kubeward::cache::Store;
use kubeward::controller::{Action, Context, Reconciler};
use kubeward::informer::CacheScope;
use kubeward::informer::Watchable;
use kubeward::manager::{Config, Manager};
use kubeward::serving::{BindAddress, Endpoints};
use kubeward::testing::{free_addr, get};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long the checks after a fault wait for the cache and the reconciles to catch up.
pub(super) const CONVERGE: Duration = Duration::from_secs(90);

/// Records every reconcile: keys reconciled twice at once, and the last resourceVersion each
/// object was reconciled at. Usable as a reconciler of any kind, or inside another reconciler.
#[derive(Clone, Debug, Default)]
pub(super) struct Witness {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    in_flight: Mutex<HashSet<String>>,
    overlaps: Mutex<Vec<String>>,
    reconciled: Mutex<HashMap<String, String>>,
}

/// One reconcile in progress; dropping it (also by a panic or a timeout) ends it.
#[derive(Debug)]
pub(super) struct Visit {
    witness: Witness,
    name: String,
}

impl Witness {
    /// Marks the reconcile of `obj` as started; notes an overlap if one was running already.
    pub(super) fn enter(&self, obj: &impl Resource) -> Visit {
        let name = obj.meta().name.clone().unwrap_or_default();
        if !self.inner.in_flight.lock().insert(name.clone()) {
            self.inner.overlaps.lock().push(name.clone());
        }
        Visit {
            witness: self.clone(),
            name,
        }
    }

    fn overlaps(&self) -> Vec<String> {
        self.inner.overlaps.lock().clone()
    }

    fn reconciled(&self) -> HashMap<String, String> {
        self.inner.reconciled.lock().clone()
    }
}

impl Visit {
    /// The reconcile of `obj` ran to the end (it returned, with success or an error).
    pub(super) fn done(self, obj: &impl Resource) {
        let version = obj.meta().resource_version.clone().unwrap_or_default();
        self.witness
            .inner
            .reconciled
            .lock()
            .insert(self.name.clone(), version);
    }
}

impl Drop for Visit {
    fn drop(&mut self) {
        self.witness.inner.in_flight.lock().remove(&self.name);
    }
}

impl<K: Watchable> Reconciler<K> for Witness {
    type Error = Infallible;

    async fn reconcile(&self, obj: Arc<K>, _ctx: &Context<K>) -> Result<Action, Infallible> {
        let visit = self.enter(obj.as_ref());
        // A little work, so that a second reconcile of the same key would overlap and be seen.
        tokio::time::sleep(Duration::from_millis(2)).await;
        visit.done(obj.as_ref());
        Ok(Action::await_change())
    }
}

/// A manager running in a task, with its probe endpoint on a free loopback port.
#[derive(Debug)]
pub(super) struct Operator {
    token: CancellationToken,
    run: JoinHandle<kubeward::manager::Result<()>>,
    probes: SocketAddr,
}

/// A manager for `client` that watches `namespace` and serves `/readyz` on the returned address.
pub(super) fn new_manager(
    client: Client,
    namespace: &str,
    config: Config,
) -> kubeward::testing::Result<(Manager, SocketAddr)> {
    let probes = free_addr()?;
    let config = config.cache(CacheScope::default().namespaces([namespace.to_owned()]));
    let manager = Manager::new(client, config).expect("a manager builds for a client given");
    manager
        .add(Endpoints::new().health_probes(BindAddress::On(probes)))
        .expect("a free address binds");
    Ok((manager, probes))
}

impl Operator {
    /// Runs `manager` (made by [`new_manager`], serving probes on `probes`).
    pub(super) fn start(manager: Manager, probes: SocketAddr) -> Self {
        let token = manager.shutdown_token();
        let run = tokio::spawn(manager.run());
        Self { token, run, probes }
    }

    /// The manager still runs and `/readyz` answers 200.
    pub(super) async fn assert_alive(&self, after: &str) -> anyhow::Result<()> {
        anyhow::ensure!(!self.run.is_finished(), "the manager stopped after {after}");
        let (status, body) = self.get("/readyz").await?;
        anyhow::ensure!(
            status == 200,
            "/readyz answered {status} after {after}: {body}"
        );
        Ok(())
    }

    /// The status code and body of `GET path` on the probe endpoint.
    pub(super) async fn get(&self, path: &str) -> anyhow::Result<(u16, String)> {
        let response = get(self.probes, path).await?;
        Ok((response.status().as_u16(), response.into_body()))
    }

    /// Whether `run()` has returned.
    pub(super) fn is_finished(&self) -> bool {
        self.run.is_finished()
    }

    /// Starts shutdown without waiting for it.
    pub(super) fn begin_shutdown(&self) {
        self.token.cancel();
    }

    /// Aborts the manager's task the way a killed process stops: nothing is finished or
    /// released. (Tasks it spawned, like the elector, live on; cut their connections first.)
    pub(super) fn kill(self) {
        self.run.abort();
    }

    /// Waits up to 60 s for `run()` to return by itself; returns its outcome.
    pub(super) async fn wait(self) -> anyhow::Result<kubeward::manager::Result<()>> {
        Ok(tokio::time::timeout(Duration::from_secs(60), self.run)
            .await
            .map_err(|_| anyhow::anyhow!("run() did not return within 60 s"))??)
    }

    /// Shuts down and expects `run()` to return `Ok` within 60 s.
    pub(super) async fn stop(self) -> anyhow::Result<()> {
        self.token.cancel();
        tokio::time::timeout(Duration::from_secs(60), self.run)
            .await
            .map_err(|_| anyhow::anyhow!("the manager did not stop within 60 s of shutdown"))??
            .map_err(anyhow::Error::from)
    }
}

/// What the checks after one fault saw.
#[derive(Clone, Copy, Debug)]
pub(super) struct Checked {
    /// Objects on the server, each compared with the cache and the reconciles.
    pub(super) objects: usize,
    /// Objects whose last change was never reconciled (the checks fail unless this is 0).
    pub(super) lost: usize,
}

/// Waits until the cache equals the server and every object was reconciled at its current
/// resourceVersion; then checks that no key was reconciled twice at once and the operator is
/// alive and ready.
pub(super) async fn check<K>(
    fault: &str,
    server: &Api<K>,
    cache: &Store<K>,
    witness: &Witness,
    operator: &Operator,
) -> anyhow::Result<Checked>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let listed = || async {
        Ok(versions(
            server.list(&ListParams::default()).await?.items.iter(),
        ))
    };
    check_against(fault, listed, cache, witness, operator).await
}

/// As [`check`], with the server's state (name → resourceVersion of each object expected in
/// the cache) from `server`.
pub(super) async fn check_against<K, F, Fut>(
    fault: &str,
    mut server: F,
    cache: &Store<K>,
    witness: &Witness,
    operator: &Operator,
) -> anyhow::Result<Checked>
where
    K: Resource + Clone,
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<BTreeMap<String, String>>>,
{
    let deadline = Instant::now() + CONVERGE;
    let (objects, lost, stale) = loop {
        let on_server = server().await?;
        let cached = versions(cache.list().iter().map(AsRef::as_ref));
        let reconciled = witness.reconciled();
        let lost = on_server
            .iter()
            .filter(|(name, version)| reconciled.get(*name) != Some(*version))
            .count();
        let stale = on_server
            .iter()
            .filter(|(name, version)| cached.get(*name) != Some(*version))
            .count()
            + cached
                .keys()
                .filter(|name| !on_server.contains_key(*name))
                .count();
        if (lost == 0 && stale == 0) || Instant::now() > deadline {
            break (on_server.len(), lost, stale);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    anyhow::ensure!(
        lost == 0 && stale == 0,
        "after {fault}: timed out after {CONVERGE:?} waiting for the cache to equal the server \
         and every last change to be reconciled; of {objects} objects {stale} differ in the \
         cache and {lost} were not reconciled at their last change"
    );
    let overlaps = witness.overlaps();
    anyhow::ensure!(
        overlaps.is_empty(),
        "after {fault}: keys reconciled twice at once: {overlaps:?}"
    );
    operator.assert_alive(fault).await?;
    Ok(Checked { objects, lost })
}

/// name → resourceVersion.
fn versions<'a, K: Resource + 'a>(
    objects: impl Iterator<Item = &'a K>,
) -> BTreeMap<String, String> {
    objects
        .map(|o| (o.name_any(), o.resource_version().unwrap_or_default()))
        .collect()
}
