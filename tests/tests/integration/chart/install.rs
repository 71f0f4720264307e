//! The chart's manifests are accepted by the real apiserver, and its RBAC is enough and no more.

use std::time::Duration;

use super::{CRD_NAME, all_on_values, chart_dir, documents, helm, kinds, path_str, run};
use anyhow::Context as _;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, ObjectReference, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, ObjectMeta, Patch,
    PatchParams, PostParams,
};
use kube::{Api, Client};
use kubeward::testing::{ControlPlane, wait_for};

#[tokio::test]
async fn the_rendered_manifests_are_accepted_by_the_apiserver_and_the_service_monitor_is_skipped()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("chart-dry-run").await?;
    let kubeconfig = path_str(cp.kubeconfig())?;
    let chart = chart_dir();
    let all_on = all_on_values();
    // A server-side dry run renders with the cluster's real capabilities: this apiserver serves
    // no ServiceMonitor API, so the chart must leave it out although the values ask for it.
    let release = helm(&[
        "install",
        "cmg",
        path_str(&chart)?,
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        &ns,
        "--values",
        path_str(&all_on)?,
        "--dry-run=server",
        // Other tests of this binary may have created the (cluster-scoped) CRD without Helm's
        // ownership labels; a dry run changes nothing, so it need not refuse to adopt it.
        "--take-ownership",
        "--output=json",
    ])
    .await?;
    let release: serde_json::Value = serde_json::from_str(&release)?;
    let manifest = release["manifest"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("the dry run returned no manifest: {release}"))?;
    let docs = documents(manifest)?;
    assert!(
        !kinds(&docs).contains("ServiceMonitor"),
        "{:?}",
        kinds(&docs)
    );
    assert!(
        release["info"]["notes"]
            .as_str()
            .is_some_and(|n| n.contains("the ServiceMonitor was skipped")),
        "NOTES.txt must say that the ServiceMonitor was skipped: {}",
        release["info"]["notes"]
    );

    let applied = run(
        "kubectl",
        &[
            "--kubeconfig",
            kubeconfig,
            "--namespace",
            &ns,
            "apply",
            "--dry-run=server",
            "--filename=-",
        ],
        Some(manifest),
    )
    .await?;
    let accepted = applied
        .lines()
        .filter(|l| l.ends_with("(server dry run)"))
        .count();
    assert_eq!(accepted, docs.len(), "kubectl said:\n{applied}");
    Ok(())
}

/// The status code of a failed API call, or `None` when it succeeded.
fn status_code<T>(result: Result<T, kube::Error>) -> Option<u16> {
    match result {
        Ok(_) => None,
        Err(kube::Error::Api(status)) => Some(status.code),
        Err(_) => Some(0),
    }
}

const FORBIDDEN: Option<u16> = Some(403);
/// Authorization comes before lookup: an allowed request for an object that does not exist is a 404.
const ALLOWED_BUT_ABSENT: Option<u16> = Some(404);

fn generator_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "demo.kubeward.dev",
        "v1",
        "ConfigMapGenerator",
    ))
}

fn named<K: kube::Resource<DynamicType = ()> + Default>(name: &str) -> K {
    let mut object = K::default();
    *object.meta_mut() = ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    };
    object
}

fn event_about_a_generator(namespace: &str) -> Event {
    Event {
        metadata: ObjectMeta {
            generate_name: Some("sample-".into()),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some("demo.kubeward.dev/v1".into()),
            kind: Some("ConfigMapGenerator".into()),
            name: Some("sample".into()),
            namespace: Some(namespace.to_owned()),
            ..ObjectReference::default()
        },
        reason: Some("Generated".into()),
        message: Some("generated ConfigMap sample".into()),
        type_: Some("Normal".into()),
        ..Event::default()
    }
}

/// Installs the chart for real with every feature on, then acts as its `ServiceAccount`.
///
/// A private control plane, because the CRD and `ClusterRole` are cluster-scoped and Helm owns
/// them: another test of this binary creating the same CRD would make the install refuse it.
///
/// No custom resource is created: kube-apiserver v1.20.2 built with Go >= 1.18 crashes on any
/// custom-resource write (its vendored reflect2 v1.0.1 predates Go 1.18's map iterator), so what
/// the `ServiceAccount` may do to them is shown by 404 (allowed, absent) against 403 (forbidden).
#[tokio::test]
async fn an_installed_release_grants_its_service_account_what_the_operator_needs_and_no_more()
-> anyhow::Result<()> {
    if kubeward::testing::skip_on_existing_cluster(
        "a private control plane the release's cluster-wide objects can own",
    ) {
        return Ok(());
    }
    let cp = ControlPlane::start().await?;
    let ns = cp.create_namespace("chart").await?;
    let other = cp.create_namespace("elsewhere").await?;
    let kubeconfig = path_str(cp.kubeconfig())?;
    let chart = chart_dir();
    let all_on = all_on_values();
    let installed = helm(&[
        "install",
        "cmg",
        path_str(&chart)?,
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        &ns,
        "--values",
        path_str(&all_on)?,
    ])
    .await?;
    assert!(installed.contains("STATUS: deployed"), "{installed}");
    assert!(
        installed.contains("the ServiceMonitor was skipped"),
        "{installed}"
    );

    let crds: Api<CustomResourceDefinition> = Api::all(cp.client());
    crd_established(&crds).await?;
    // Pods never start here (there is no kubelet), but the Deployment is stored as rendered.
    let deployment = Api::<Deployment>::namespaced(cp.client(), &ns)
        .get("cmg-configmap-generator")
        .await?;
    let pod = deployment.spec.template.spec.unwrap_or_default();
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("cmg-configmap-generator")
    );

    let sa = cp.service_account_client(&ns, "cmg-configmap-generator");
    what_the_operator_needs_is_allowed(&sa, &ns, &other).await?;
    nothing_more_is_allowed(&sa, &ns, &other).await?;

    // crds.keep=false in these values: uninstalling takes the CRD with it.
    helm(&[
        "uninstall",
        "cmg",
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        &ns,
    ])
    .await?;
    wait_for(
        Duration::from_secs(30),
        "the CRD to be deleted with the release",
        || {
            let crds = crds.clone();
            async move { crds.get_opt(CRD_NAME).await.ok()?.is_none().then_some(()) }
        },
    )
    .await?;
    Ok(())
}

async fn crd_established(crds: &Api<CustomResourceDefinition>) -> anyhow::Result<()> {
    Ok(
        wait_for(Duration::from_secs(30), "the CRD to be established", || {
            let crds = crds.clone();
            async move {
                let crd = crds.get(CRD_NAME).await.ok()?;
                crd.status?
                    .conditions?
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
                    .then_some(())
            }
        })
        .await?,
    )
}

/// Its custom resources everywhere (and their status and finalizers), ConfigMaps and Events next
/// to them, and its Lease in the release namespace `ns`.
async fn what_the_operator_needs_is_allowed(
    sa: &Client,
    ns: &str,
    other: &str,
) -> anyhow::Result<()> {
    let generators: Api<DynamicObject> =
        Api::namespaced_with(sa.clone(), other, &generator_resource());
    let all_generators: Api<DynamicObject> = Api::all_with(sa.clone(), &generator_resource());
    all_generators
        .list(&ListParams::default())
        .await
        .context("listing ConfigMapGenerators in all namespaces")?;
    generators
        .list(&ListParams::default())
        .await
        .context("listing ConfigMapGenerators in a namespace")?;
    let status_patch = Patch::Merge(serde_json::json!({ "status": { "observedGeneration": 1 } }));
    assert_eq!(
        status_code(
            generators
                .patch_status("absent", &PatchParams::default(), &status_patch)
                .await
        ),
        ALLOWED_BUT_ABSENT,
        "patching a ConfigMapGenerator's status must be allowed"
    );
    let finalizer_patch = Patch::Merge(
        serde_json::json!({ "metadata": { "finalizers": ["demo.kubeward.dev/cleanup"] } }),
    );
    assert_eq!(
        status_code(
            generators
                .patch("absent", &PatchParams::default(), &finalizer_patch)
                .await
        ),
        ALLOWED_BUT_ABSENT,
        "patching a ConfigMapGenerator's finalizers must be allowed"
    );
    for namespace in [ns, other] {
        let config_maps = Api::<ConfigMap>::namespaced(sa.clone(), namespace);
        config_maps
            .create(&PostParams::default(), &named("generated"))
            .await
            .with_context(|| format!("creating a ConfigMap in {namespace}"))?;
        config_maps
            .delete("generated", &DeleteParams::default())
            .await
            .with_context(|| format!("deleting a ConfigMap in {namespace}"))?;
    }
    Api::<Event>::namespaced(sa.clone(), other)
        .create(&PostParams::default(), &event_about_a_generator(other))
        .await
        .context("creating an Event")?;
    Api::<Lease>::namespaced(sa.clone(), ns)
        .create(&PostParams::default(), &named("configmap-generator-all-on"))
        .await
        .context("creating the Lease in the release namespace")?;

    // Secure metrics (on by default): it reviews scrapers' tokens and permissions.
    let review = TokenReview {
        spec: TokenReviewSpec {
            token: "not-a-token".into(),
            ..TokenReviewSpec::default()
        },
        ..TokenReview::default()
    };
    let reviewed = Api::<TokenReview>::all(sa.clone())
        .create(&PostParams::default(), &review)
        .await
        .context("creating a TokenReview")?;
    // `authenticated: false` is left out of the answer, as the API omits false booleans.
    assert_ne!(reviewed.status.and_then(|s| s.authenticated), Some(true));
    let access = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some("someone".into()),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some("/metrics".into()),
                verb: Some("get".into()),
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    Api::<SubjectAccessReview>::all(sa.clone())
        .create(&PostParams::default(), &access)
        .await
        .context("creating a SubjectAccessReview")?;

    // Self-signed webhooks (these values): it patches its CA into its own configurations and CRD.
    let empty = Patch::Merge(serde_json::json!({}));
    Api::<ValidatingWebhookConfiguration>::all(sa.clone())
        .patch(VALIDATING_CONFIGURATION, &PatchParams::default(), &empty)
        .await
        .context("patching its ValidatingWebhookConfiguration")?;
    Api::<MutatingWebhookConfiguration>::all(sa.clone())
        .patch(MUTATING_CONFIGURATION, &PatchParams::default(), &empty)
        .await
        .context("patching its MutatingWebhookConfiguration")?;
    Api::<CustomResourceDefinition>::all(sa.clone())
        .patch(CRD_NAME, &PatchParams::default(), &empty)
        .await
        .context("patching its CRD")?;

    Ok(())
}

/// The names of the example's webhook configurations (files/webhooks.yaml).
const VALIDATING_CONFIGURATION: &str =
    "configmap-generator-webhooks-validating-webhook-configuration";
const MUTATING_CONFIGURATION: &str = "configmap-generator-webhooks-mutating-webhook-configuration";

/// No Secrets, no Leases outside the release namespace `ns`, no other webhook configurations or
/// CRDs to patch, and it never creates or deletes the
/// custom resources it reconciles.
async fn nothing_more_is_allowed(sa: &Client, ns: &str, other: &str) -> anyhow::Result<()> {
    let generators: Api<DynamicObject> =
        Api::namespaced_with(sa.clone(), other, &generator_resource());
    assert_eq!(
        status_code(
            Api::<Secret>::namespaced(sa.clone(), ns)
                .list(&ListParams::default())
                .await
        ),
        FORBIDDEN,
        "listing Secrets must be forbidden"
    );
    assert_eq!(
        status_code(
            Api::<Lease>::namespaced(sa.clone(), other)
                .create(&PostParams::default(), &named("elsewhere"))
                .await
        ),
        FORBIDDEN,
        "Leases outside the release namespace must be forbidden"
    );
    let mut sample = DynamicObject::new("sample", &generator_resource());
    sample.data = serde_json::json!({ "spec": { "content": "hello" } });
    assert_eq!(
        status_code(generators.create(&PostParams::default(), &sample).await),
        FORBIDDEN,
        "creating ConfigMapGenerators must be forbidden"
    );
    assert_eq!(
        status_code(generators.delete("absent", &DeleteParams::default()).await),
        FORBIDDEN,
        "deleting ConfigMapGenerators must be forbidden"
    );
    let empty = Patch::Merge(serde_json::json!({}));
    assert_eq!(
        status_code(
            Api::<ValidatingWebhookConfiguration>::all(sa.clone())
                .patch("someone-elses", &PatchParams::default(), &empty)
                .await
        ),
        FORBIDDEN,
        "patching other webhook configurations must be forbidden"
    );
    assert_eq!(
        status_code(
            Api::<CustomResourceDefinition>::all(sa.clone())
                .patch("someone.elses.example.com", &PatchParams::default(), &empty)
                .await
        ),
        FORBIDDEN,
        "patching other CRDs must be forbidden"
    );

    Ok(())
}
