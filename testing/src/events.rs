//! Captures the Kubernetes Events a controller emitted about an object.

use k8s_openapi::api::events::v1::Event;
use kube::api::ListParams;
use kube::{Api, Client, Resource};

use super::{Error, Result};

/// The Events (`events.k8s.io/v1`, what kubeward's `Context::event`
/// writes) whose subject is `obj`, oldest first. Works on the control plane and on the fake.
///
/// Matches by uid when `obj` has one (a later object of the same name is not confused with it),
/// else by kind and name.
///
/// # Errors
/// [`Error::Api`] when the Events cannot be listed.
pub async fn events_about<K: Resource<DynamicType = ()>>(
    client: Client,
    obj: &K,
) -> Result<Vec<Event>> {
    let meta = obj.meta();
    // Events of a cluster-scoped object live in `default`.
    let namespace = meta.namespace.as_deref().unwrap_or("default");
    let api: Api<Event> = Api::namespaced(client, namespace);
    let listed = api
        .list(&ListParams::default())
        .await
        .map_err(|e| Error::Api {
            action: format!("listing Events in {namespace}"),
            source: Box::new(e),
        })?;
    let kind = K::kind(&());
    let mut about: Vec<Event> = listed
        .items
        .into_iter()
        .filter(|event| {
            event
                .regarding
                .as_ref()
                .is_some_and(|r| match (&meta.uid, &r.uid) {
                    (Some(uid), Some(regarding)) => uid == regarding,
                    _ => r.kind.as_deref() == Some(kind.as_ref()) && r.name == meta.name,
                })
        })
        .collect();
    about.sort_by(|a, b| {
        a.event_time
            .as_ref()
            .map(|t| t.0)
            .cmp(&b.event_time.as_ref().map(|t| t.0))
    });
    Ok(about)
}
