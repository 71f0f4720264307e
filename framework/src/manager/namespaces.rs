//! Warns of watched namespaces that do not exist: their informers run, and stay empty until then.

use k8s_openapi::api::core::v1::Namespace;
use kube::{Api, Client};

use crate::error::chain;

/// Logs a warning for each of `namespaces` that does not exist. Its informers list and watch it
/// all the same (the API server answers an empty list), so its objects are cached once it is
/// created. A manager whose RBAC may not read Namespaces (Roles in the watched namespaces only)
/// cannot tell, and says so at debug level.
pub(super) async fn warn_of_missing(client: Client, namespaces: Vec<String>) {
    let api: Api<Namespace> = Api::all(client);
    for namespace in namespaces {
        match api.get_opt(&namespace).await {
            Ok(Some(_)) => {}
            Ok(None) => tracing::warn!(
                namespace,
                "the watched namespace {namespace:?} does not exist; its objects will be cached \
                 once it is created"
            ),
            Err(error) => tracing::debug!(
                namespace,
                error = %chain(&error),
                "cannot tell whether the watched namespace exists"
            ),
        }
    }
}
