//! Custom resources that violate the Rust type, in a CRD that preserves unknown fields: skipped
//! and counted, every other object reconciled, and a fixed object picked up.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::{Api, Client, CustomResource, ResourceExt};
use kubeward::controller::Controller;
use kubeward::manager::Config;
use kubeward::testing::{ControlPlane, wait_for};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::time::Instant;

use super::summary::Row;
use super::witness::{Operator, Witness, check_against, new_manager};

/// Only `replicas` is typed, as a number; the CRD accepts anything.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize)]
#[kube(
    group = "reliability.kubeward.dev",
    version = "v1",
    kind = "Gadget",
    namespaced,
    schema = "disabled"
)]
pub(super) struct GadgetSpec {
    replicas: i32,
}

/// Creates good and bad Gadgets, runs a typed controller, then fixes one bad Gadget.
pub(super) async fn custom_resources(cp: &ControlPlane) -> anyhow::Result<Vec<Row>> {
    let ns = cp.create_namespace("rel-undecodable").await?;
    let dynamic = install(&cp.client(), &ns).await?;
    for i in 0..5 {
        let gadget = gadget(&format!("good-{i}"), &serde_json::json!({ "replicas": i }))?;
        dynamic.create(&PostParams::default(), &gadget).await?;
    }
    let bad = [
        ("bad-text", serde_json::json!({ "replicas": "three" })),
        ("bad-missing", serde_json::json!({ "size": 3 })),
    ];
    for (name, spec) in &bad {
        dynamic
            .create(&PostParams::default(), &gadget(name, spec)?)
            .await?;
    }

    let witness = Witness::default();
    let (manager, probes) = new_manager(cp.client(), &ns, Config::default())?;
    let informer = manager
        .factory()
        .informer(Api::<Gadget>::namespaced(manager.client(), &ns));
    let cache = informer.store();
    manager.add(Controller::<Gadget>::new(witness.clone()).name("gadgets"))?;
    let created = Instant::now();
    let operator = Operator::start(manager, probes);
    let decodable = |skip: &'static [&'static str]| {
        let dynamic = dynamic.clone();
        move || {
            let dynamic = dynamic.clone();
            async move {
                let listed = dynamic.list(&ListParams::default()).await?;
                anyhow::Ok(
                    listed
                        .items
                        .iter()
                        .filter(|o| !skip.contains(&o.name_any().as_str()))
                        .map(|o| (o.name_any(), o.resource_version().unwrap_or_default()))
                        .collect::<BTreeMap<_, _>>(),
                )
            }
        }
    };
    let fault = "custom resources that do not decode";
    let mut checked = check_against(
        fault,
        decodable(&["bad-text", "bad-missing"]),
        &cache,
        &witness,
        &operator,
    )
    .await?;
    let skipped = informer.stats().decode_failures();
    anyhow::ensure!(
        skipped >= 2,
        "both undecodable Gadgets must be counted as decode failures, counted {skipped}"
    );
    let mut row = Row::new(
        "custom resources that violate the Rust type (CRD preserving unknown fields)",
        "created (then: fixed)",
    );
    row.record(&checked, created.elapsed());

    let fixed = Instant::now();
    let patch = serde_json::json!({ "spec": { "replicas": 3 } });
    dynamic
        .patch("bad-text", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    checked = check_against(
        "fixing a Gadget that did not decode",
        decodable(&["bad-missing"]),
        &cache,
        &witness,
        &operator,
    )
    .await?;
    row.record(&checked, fixed.elapsed());
    row.injected(bad.len() as u64);
    row.note(format!(
        "skipped and counted ({skipped} decode failures); the fixed one reconciled"
    ));
    operator.stop().await?;
    Ok(vec![row])
}

async fn install(client: &Client, ns: &str) -> anyhow::Result<Api<DynamicObject>> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.reliability.kubeward.dev"},
        "spec": {
            "group": "reliability.kubeward.dev",
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    }))?;
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(err) => return Err(err.into()),
    }
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("reliability.kubeward.dev", "v1", "Gadget"),
        "gadgets",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
    wait_for(
        Duration::from_secs(60),
        "the Gadget CRD to be served",
        || async { api.list(&ListParams::default()).await.ok().map(drop) },
    )
    .await?;
    Ok(api)
}

fn gadget(name: &str, spec: &serde_json::Value) -> anyhow::Result<DynamicObject> {
    Ok(serde_json::from_value(serde_json::json!({
        "apiVersion": "reliability.kubeward.dev/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": spec
    }))?)
}
