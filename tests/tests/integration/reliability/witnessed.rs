//! The set-up most reliability runs start from: a manager in the run's namespace with one
//! ConfigMap controller whose reconciles a [`Witness`] records, and its cache, which the checks
//! compare with the server.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use kubeward::cache::Store;
use kubeward::controller::Controller;
use kubeward::manager::Config;

use super::witness::{Operator, Witness, new_manager};

/// A running witnessed operator.
pub(super) struct Witnessed {
    pub(super) witness: Witness,
    pub(super) cache: Store<ConfigMap>,
    pub(super) registry: prometheus::Registry,
    pub(super) operator: Operator,
}

/// Starts the controller `name` with `concurrency` workers on ConfigMaps of `namespace`, in a
/// manager of `config` (made by [`new_manager`]) that runs until the operator is stopped.
pub(super) fn start_witnessed(
    client: Client,
    namespace: &str,
    config: Config,
    (name, concurrency): (&str, u16),
) -> anyhow::Result<Witnessed> {
    let witness = Witness::default();
    let (manager, probes) = new_manager(client, namespace, config)?;
    let cache = manager
        .factory()
        .informer(Api::<ConfigMap>::namespaced(manager.client(), namespace))
        .store();
    manager.add(
        Controller::<ConfigMap>::new(witness.clone())
            .name(name)
            .concurrency(concurrency),
    )?;
    let registry = manager.registry().clone();
    Ok(Witnessed {
        witness,
        cache,
        registry,
        operator: Operator::start(manager, probes),
    })
}
