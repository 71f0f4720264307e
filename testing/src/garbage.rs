//! Collects garbage in one namespace, as kube-controller-manager does: an object whose owners are
//! all gone is deleted.
//!
//! The local control plane runs no controller manager, so owned objects would outlive their owner
//! there and an operator would need cleanup code that a real cluster does not. Started in a test,
//! this deletes (in the background, with a uid precondition) every object of the kinds it is
//! given whose `ownerReferences` all name owners that no longer exist, or exist with another uid.
//! It checks every 200 ms; it does not block an owner's deletion (`blockOwnerDeletion`) nor
//! orphan (`propagationPolicy: Orphan`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Preconditions,
};
use kube::discovery::{self, Scope};
use kube::{Api, Client, ResourceExt as _};
use tokio::task::JoinHandle;

/// How often the collector looks for garbage.
const EVERY: Duration = Duration::from_millis(200);

/// Deletes, in one namespace, the objects of some kinds whose owners are all gone, until dropped.
#[derive(Debug)]
pub struct GarbageCollector {
    collected: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl GarbageCollector {
    /// Starts collecting the objects of the kinds `owned` (e.g.
    /// `ApiResource::erase::<ConfigMap>(&())`) in `namespace` through `client`.
    #[must_use]
    pub fn start(client: Client, namespace: &str, owned: Vec<ApiResource>) -> Self {
        let collected = Arc::new(AtomicU64::new(0));
        let collector = Collector {
            client,
            namespace: namespace.to_owned(),
            owners: HashMap::new(),
            collected: Arc::clone(&collected),
        };
        let task = tokio::spawn(collector.run(owned));
        Self { collected, task }
    }

    /// How many objects it deleted so far.
    #[must_use]
    pub fn collected(&self) -> u64 {
        self.collected.load(Ordering::SeqCst)
    }
}

impl Drop for GarbageCollector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Collector {
    client: Client,
    namespace: String,
    /// The owners' kinds, as discovery resolved them.
    owners: HashMap<GroupVersionKind, (ApiResource, Scope)>,
    collected: Arc<AtomicU64>,
}

impl Collector {
    async fn run(mut self, owned: Vec<ApiResource>) {
        loop {
            for resource in &owned {
                // A failed pass (the server restarting, say) is tried again at the next.
                let _ = self.pass(resource).await;
            }
            tokio::time::sleep(EVERY).await;
        }
    }

    /// Deletes the objects of `resource` whose owners are all gone.
    async fn pass(&mut self, resource: &ApiResource) -> kube::Result<()> {
        let api =
            Api::<DynamicObject>::namespaced_with(self.client.clone(), &self.namespace, resource);
        for object in api.list(&ListParams::default()).await? {
            let references = object.owner_references();
            if references.is_empty() || object.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let mut orphaned = true;
            for reference in references {
                if self.exists(reference).await? {
                    orphaned = false;
                    break;
                }
            }
            if orphaned {
                let delete = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: object.uid(),
                        resource_version: None,
                    }),
                    ..DeleteParams::background()
                };
                if api.delete(&object.name_any(), &delete).await.is_ok() {
                    self.collected.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
        Ok(())
    }

    /// Whether the owner `reference` names exists with the uid it names.
    async fn exists(&mut self, reference: &OwnerReference) -> kube::Result<bool> {
        let (group, version) = match reference.api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", reference.api_version.as_str()),
        };
        let kind = GroupVersionKind::gvk(group, version, &reference.kind);
        if !self.owners.contains_key(&kind) {
            let (resource, capabilities) = discovery::pinned_kind(&self.client, &kind).await?;
            self.owners
                .insert(kind.clone(), (resource, capabilities.scope));
        }
        let (resource, scope) = &self.owners[&kind];
        let api = match scope {
            Scope::Namespaced => Api::<DynamicObject>::namespaced_with(
                self.client.clone(),
                &self.namespace,
                resource,
            ),
            Scope::Cluster => Api::<DynamicObject>::all_with(self.client.clone(), resource),
        };
        let owner = api.get_opt(&reference.name).await?;
        Ok(owner.is_some_and(|owner| owner.uid().as_deref() == Some(reference.uid.as_str())))
    }
}
