//! The cache scope on the real control plane: a namespace set, per-kind selectors, a namespace
//! that appears late, and RBAC of namespaced Roles only.
//!
//! The controllers here reconcile ConfigMaps and record, at each reconcile, its key and the keys
//! their cache holds: what a manager reconciles and what it caches.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client, ResourceExt as _};
use kubeward::controller::{Action, Context, Reconciler};
use kubeward::testing::wait_for;
use parking_lot::Mutex;

mod missing;
mod namespaces;
mod rbac;
mod selectors;

/// How long the manager may take to react to a change.
const REACT: Duration = Duration::from_secs(30);

/// Records every reconciled key (`namespace/name`) and the keys the controller's cache held then.
#[derive(Clone, Default)]
struct Seen {
    reconciled: Arc<Mutex<Vec<String>>>,
    cached: Arc<Mutex<BTreeSet<String>>>,
}

impl Reconciler<ConfigMap> for Seen {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        ctx: &Context<ConfigMap>,
    ) -> Result<Action, kube::Error> {
        self.reconciled.lock().push(key(cm.as_ref()));
        let cached: BTreeSet<String> = ctx.store().list().iter().map(|c| key(c.as_ref())).collect();
        *self.cached.lock() = cached;
        Ok(Action::await_change())
    }
}

impl Seen {
    /// Waits until `key` has been reconciled.
    async fn reconciled(&self, key: &str) -> anyhow::Result<()> {
        wait_for(REACT, &format!("a reconcile of {key}"), || async {
            self.reconciled
                .lock()
                .iter()
                .any(|k| k == key)
                .then_some(())
        })
        .await?;
        Ok(())
    }

    /// Every key reconciled so far.
    fn reconciled_keys(&self) -> Vec<String> {
        self.reconciled.lock().clone()
    }

    /// The keys the cache held at the latest reconcile.
    fn cached_keys(&self) -> BTreeSet<String> {
        self.cached.lock().clone()
    }
}

fn key(cm: &ConfigMap) -> String {
    format!("{}/{}", cm.namespace().unwrap_or_default(), cm.name_any())
}

/// Creates the ConfigMap `name` in `ns`, with `labels`.
async fn create(
    client: &Client,
    ns: &str,
    name: &str,
    labels: &[(&str, &str)],
) -> anyhow::Result<()> {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &cm)
        .await?;
    Ok(())
}
