//! A CRD's conversion webhook on the real control plane: the kube-apiserver calls the manager's
//! `/convert` at `https://127.0.0.1:PORT` with the manager's self-signed CA in the CRD's
//! `caBundle`, to read and write objects in a version other than the stored one.

mod example;
mod gadget;
pub(crate) mod https;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, CustomResourceExt as _};
use kubeward::conversion::Converter;
use kubeward::crd::with_versions;
use kubeward::manager::{Config, Manager};
use kubeward::testing::{ControlPlane, free_addr, install_crd, wait_for};
use kubeward::webhook;
use serde_json::json;

use self::gadget::{GadgetStatus, v1, v1alpha1};

/// The test kind's CRD.
const CRD: &str = "gadgets.conversion.kubeward.dev";

/// A `v1alpha1` gadget with every field set.
fn old_gadget(name: &str) -> v1alpha1::Gadget {
    let mut gadget = v1alpha1::Gadget::new(
        name,
        v1alpha1::GadgetSpec {
            size: 7,
            colour: "red".into(),
            finish: Some("matte".into()),
            tags: vec!["a".into(), "b".into()],
            settings: [("mode".to_owned(), "fast".to_owned())].into(),
            enabled: true,
            ratio: 0.25,
        },
    );
    gadget.metadata.labels = Some([("team".to_owned(), "blue".to_owned())].into());
    gadget.metadata.annotations = Some([("note".to_owned(), "kept".to_owned())].into());
    gadget
}

/// A manager serving the gadget's conversions on a free loopback port, with a self-signed
/// certificate whose CA it writes into the CRD along with its URL.
fn manager(client: Client) -> anyhow::Result<(Manager, u16)> {
    let port = free_addr()?.port();
    let config = webhook::Config::default()
        .port(port)
        .self_signed(true)
        .hosts(["127.0.0.1"])
        .url(format!("https://127.0.0.1:{port}"));
    let manager = Manager::new(client, Config::default().webhook(config))?;
    manager.add_conversion(
        Converter::with_hub::<v1::Gadget>()
            .spoke::<v1alpha1::Gadget>()
            .build(),
    )?;
    Ok((manager, port))
}

/// The CA the manager wrote into the CRD, once it has.
async fn ca_bundle(crds: &Api<CustomResourceDefinition>) -> anyhow::Result<String> {
    let ca = wait_for(
        Duration::from_secs(30),
        "the manager to write its CA into the CRD's conversion webhook",
        || async {
            let crd = crds.get(CRD).await.ok()?;
            let client = crd.spec.conversion?.webhook?.client_config?;
            client.url.as_ref()?;
            String::from_utf8(client.ca_bundle?.0).ok()
        },
    )
    .await?;
    Ok(ca)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_object_is_read_and_written_as_v1_without_loss() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let client = cp.client();
    let ns = cp.create_namespace("conversion").await?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());

    // Before v1 existed: the CRD has only v1alpha1, and a gadget is stored in it, with status.
    install_crd::<v1alpha1::Gadget>(client.clone()).await?;
    let old_api: Api<v1alpha1::Gadget> = Api::namespaced(client.clone(), &ns);
    old_api
        .create(&PostParams::default(), &old_gadget("g"))
        .await?;
    let status = json!({ "status": { "observedGeneration": 1, "message": "made" } });
    let old = old_api
        .patch_status("g", &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    assert_eq!(
        old.status,
        Some(GadgetStatus {
            observed_generation: Some(1),
            message: "made".into()
        })
    );

    // v1 arrives as the storage version, converted by the operator's webhook.
    let crd = with_versions(v1::Gadget::crd(), [v1alpha1::Gadget::crd()]);
    crds.patch(
        CRD,
        &PatchParams::apply("conversion-test").force(),
        &Patch::Apply(&crd),
    )
    .await?;
    let (manager, port) = manager(client.clone())?;
    let stop = manager.shutdown_token();
    let run = tokio::spawn(manager.run());
    let ca = ca_bundle(&crds).await?;

    // Read as v1: converted by the webhook, every field there, metadata as it was.
    let new_api: Api<v1::Gadget> = Api::namespaced(client.clone(), &ns);
    let new = wait_for(
        Duration::from_secs(30),
        "the API server to serve the v1alpha1 gadget as v1 through the webhook",
        || async { new_api.get("g").await.ok() },
    )
    .await?;
    assert_eq!(
        new.spec,
        v1::GadgetSpec {
            size: 7,
            paint: v1::Paint {
                colour: "red".into(),
                finish: Some("matte".into())
            },
            tags: vec!["a".into(), "b".into()],
            settings: [("mode".to_owned(), "fast".to_owned())].into(),
            paused: false,
            ratio: 0.25,
        }
    );
    assert_eq!(new.status, old.status);
    assert_eq!(new.metadata, old.metadata, "only apiVersion changes");

    // Written back as v1 (now stored as v1), read as v1alpha1: nothing lost.
    let mut written = new.clone();
    written
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert("written-as".into(), "v1".into());
    let written = new_api
        .replace("g", &PostParams::default(), &written)
        .await?;
    let stored = crds.get(CRD).await?.status.map(|s| s.stored_versions);
    assert_eq!(
        stored,
        Some(Some(vec!["v1alpha1".to_owned(), "v1".to_owned()])),
        "the object was written in the storage version, v1"
    );
    let again = old_api.get("g").await?;
    assert_eq!(again.spec, old.spec, "every v1alpha1 field survives");
    assert_eq!(again.status, old.status);
    assert_eq!(again.metadata, written.metadata);
    let mut labels = old.metadata.labels.clone().unwrap_or_default();
    labels.insert("written-as".into(), "v1".into());
    assert_eq!(again.metadata.labels, Some(labels));
    assert_eq!(again.metadata.annotations, old.metadata.annotations);
    assert_eq!(again.metadata.uid, old.metadata.uid);

    // A v1 object that v1alpha1 cannot hold: reading it as v1alpha1 fails with the reason.
    let mut big = written.clone();
    big.metadata = kube::api::ObjectMeta {
        name: Some("big".into()),
        ..kube::api::ObjectMeta::default()
    };
    big.spec.size = 70_000;
    big.status = None;
    new_api.create(&PostParams::default(), &big).await?;
    let refused = old_api.get("big").await.expect_err("70000 does not fit");
    let message = refused.to_string();
    assert!(
        message.contains("size 70000 does not fit v1alpha1's 16 bits")
            && message.contains(&format!("{ns}/big")),
        "{message}"
    );

    // Bad bodies get a clear answer, and the server goes on converting.
    https::bad_bodies_are_answered_clearly(port, &ca).await?;
    let still = old_api.get("g").await?;
    assert_eq!(still.spec, old.spec, "the webhook still converts");

    stop.cancel();
    run.await??;
    Ok(())
}
