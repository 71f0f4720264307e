//! The chart's secure serving: authenticated metrics on by default with their RBAC, and the
//! webhook server with cert-manager or a self-signed certificate, each rendered by `helm template`.

use serde_norway::Value;

use super::{
    CRD_NAME, SERVICE_MONITOR, chart_dir, helm, kinds, manager, path_str, strings, template, the,
};

const SERVICE_ACCOUNT: &str = "cmg-configmap-generator";
const WEBHOOK_SERVICE: &str = "cmg-configmap-generator-webhook";
const CERTIFICATE: &str = "cmg-configmap-generator-webhook-cert";
const CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";

/// The rendered object of `kind` named `name`.
fn named<'a>(docs: &'a [Value], kind: &str, name: &str) -> anyhow::Result<&'a Value> {
    docs.iter()
        .find(|d| d["kind"].as_str() == Some(kind) && d["metadata"]["name"].as_str() == Some(name))
        .ok_or_else(|| anyhow::anyhow!("no {kind} {name} was rendered; kinds: {:?}", kinds(docs)))
}

fn is_named(docs: &[Value], kind: &str, name: &str) -> bool {
    named(docs, kind, name).is_ok()
}

/// The manager container's arguments.
fn args(docs: &[Value]) -> anyhow::Result<Vec<String>> {
    let deployment = the(docs, "Deployment")?;
    Ok(strings(&manager(deployment)?["args"])
        .into_iter()
        .map(str::to_owned)
        .collect())
}

/// The rules of a rendered ClusterRole as (apiGroups, resources, nonResourceURLs, verbs,
/// resourceNames) string lists joined by commas, one string per rule.
fn rules(role: &Value) -> Vec<String> {
    role["rules"]
        .as_sequence()
        .into_iter()
        .flatten()
        .map(|rule| {
            [
                "apiGroups",
                "resources",
                "nonResourceURLs",
                "verbs",
                "resourceNames",
            ]
            .map(|field| strings(&rule[field]).join(","))
            .join(" | ")
        })
        .collect()
}

/// A ClusterRoleBinding of `role` to the operator's ServiceAccount in `default` is rendered.
fn bound_to_the_operator(docs: &[Value], role: &str) -> anyhow::Result<()> {
    let binding = named(docs, "ClusterRoleBinding", role)?;
    assert_eq!(binding["roleRef"]["name"].as_str(), Some(role));
    let subject = &binding["subjects"][0];
    assert_eq!(subject["name"].as_str(), Some(SERVICE_ACCOUNT));
    assert_eq!(subject["namespace"].as_str(), Some("default"));
    Ok(())
}

#[tokio::test]
async fn metrics_are_secure_by_default_with_the_review_rbac_a_reader_role_and_an_https_service_monitor()
-> anyhow::Result<()> {
    let docs = template(&[
        "--api-versions",
        SERVICE_MONITOR,
        "--set",
        "metrics.serviceMonitor.enabled=true",
    ])
    .await?;
    assert!(args(&docs)?.contains(&"--metrics-secure=true".to_owned()));

    let auth = named(&docs, "ClusterRole", "cmg-configmap-generator-metrics-auth")?;
    assert_eq!(
        rules(auth),
        [
            "authentication.k8s.io | tokenreviews |  | create | ",
            "authorization.k8s.io | subjectaccessreviews |  | create | ",
        ]
    );
    bound_to_the_operator(&docs, "cmg-configmap-generator-metrics-auth")?;
    let reader = named(
        &docs,
        "ClusterRole",
        "cmg-configmap-generator-metrics-reader",
    )?;
    assert_eq!(rules(reader), [" |  | /metrics | get | "]);

    let endpoint = &the(&docs, "ServiceMonitor")?["spec"]["endpoints"][0];
    assert_eq!(endpoint["scheme"].as_str(), Some("https"));
    assert_eq!(
        endpoint["bearerTokenFile"].as_str(),
        Some("/var/run/secrets/kubernetes.io/serviceaccount/token")
    );
    assert_eq!(
        endpoint["tlsConfig"]["insecureSkipVerify"].as_bool(),
        Some(true)
    );

    // metrics.secure=false: plain HTTP, no review RBAC, a plain scrape.
    let plain = template(&[
        "--api-versions",
        SERVICE_MONITOR,
        "--set",
        "metrics.serviceMonitor.enabled=true",
        "--set",
        "metrics.secure=false",
    ])
    .await?;
    assert!(args(&plain)?.contains(&"--metrics-secure=false".to_owned()));
    assert!(!is_named(
        &plain,
        "ClusterRole",
        "cmg-configmap-generator-metrics-auth"
    ));
    assert!(!is_named(
        &plain,
        "ClusterRole",
        "cmg-configmap-generator-metrics-reader"
    ));
    let endpoint = &the(&plain, "ServiceMonitor")?["spec"]["endpoints"][0];
    assert!(endpoint["scheme"].is_null() && endpoint["bearerTokenFile"].is_null());
    Ok(())
}

#[tokio::test]
async fn webhooks_are_off_by_default_and_their_server_with_them() -> anyhow::Result<()> {
    let docs = template(&[]).await?;
    assert!(args(&docs)?.contains(&"--webhook-port=0".to_owned()));
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "Issuer",
        "Certificate",
    ] {
        assert!(
            !kinds(&docs).contains(kind),
            "{kind} rendered with webhooks off"
        );
    }
    assert!(!is_named(&docs, "Service", WEBHOOK_SERVICE));
    let crd = the(&docs, "CustomResourceDefinition")?;
    assert!(crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].is_null());
    // Nothing converts, so only the stored version is served.
    assert_eq!(crd["spec"]["conversion"]["strategy"].as_str(), Some("None"));
    let versions = crd["spec"]["versions"]
        .as_sequence()
        .cloned()
        .unwrap_or_default();
    assert!(versions.len() > 1, "the example's CRD has several versions");
    for version in &versions {
        assert_eq!(version["served"], version["storage"], "{version:?}");
    }
    Ok(())
}

/// The CRD converts through the chart's webhook Service, serving every version.
fn assert_converts_through_the_service(crd: &Value) {
    let conversion = &crd["spec"]["conversion"];
    assert_eq!(conversion["strategy"].as_str(), Some("Webhook"));
    assert_eq!(
        conversion["webhook"]["clientConfig"]["service"]["name"].as_str(),
        Some(WEBHOOK_SERVICE),
        "the CRD converts through the chart's webhook Service"
    );
    let versions = crd["spec"]["versions"]
        .as_sequence()
        .cloned()
        .unwrap_or_default();
    assert!(
        versions.iter().all(|v| v["served"].as_bool() == Some(true)),
        "{versions:?}"
    );
}

/// The webhook configurations call the webhook Service at their paths, with the values' policy.
fn assert_configurations_call_the_service(docs: &[Value]) -> anyhow::Result<Vec<&Value>> {
    let mut configurations = Vec::new();
    for kind in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        let configuration = the(docs, kind)?;
        let webhooks = configuration["webhooks"]
            .as_sequence()
            .ok_or_else(|| anyhow::anyhow!("{kind} has no webhooks"))?;
        assert!(!webhooks.is_empty(), "{kind} has no webhooks");
        for webhook in webhooks {
            let service = &webhook["clientConfig"]["service"];
            assert_eq!(service["name"].as_str(), Some(WEBHOOK_SERVICE), "{kind}");
            assert_eq!(service["namespace"].as_str(), Some("default"), "{kind}");
            assert_eq!(service["port"].as_u64(), Some(443), "{kind}");
            assert!(
                service["path"].as_str().is_some_and(|p| p.starts_with('/')),
                "{kind}: {service:?}"
            );
            assert!(webhook["clientConfig"]["url"].is_null(), "{kind}");
            assert_eq!(webhook["sideEffects"].as_str(), Some("None"), "{kind}");
            assert_eq!(webhook["failurePolicy"].as_str(), Some("Ignore"), "{kind}");
            assert_eq!(webhook["timeoutSeconds"].as_u64(), Some(5), "{kind}");
        }
        configurations.push(configuration);
    }
    Ok(configurations)
}

/// The webhook Service and the container port it targets.
fn assert_served(docs: &[Value]) -> anyhow::Result<()> {
    let service = named(docs, "Service", WEBHOOK_SERVICE)?;
    let port = &service["spec"]["ports"][0];
    assert_eq!(port["port"].as_u64(), Some(443));
    assert_eq!(port["targetPort"].as_str(), Some("webhook"));
    let container = manager(the(docs, "Deployment")?)?;
    let ports = container["ports"].as_sequence().into_iter().flatten();
    let webhook = ports
        .filter(|p| p["name"].as_str() == Some("webhook"))
        .map(|p| p["containerPort"].as_u64())
        .collect::<Vec<_>>();
    assert_eq!(webhook, [Some(9443)]);
    let env = container["env"].as_sequence().into_iter().flatten();
    assert!(
        env.into_iter()
            .any(|e| e["name"].as_str() == Some("KUBEWARD_WEBHOOK_SERVICE")
                && e["value"].as_str() == Some(WEBHOOK_SERVICE)),
        "the operator is told its Service's name"
    );
    Ok(())
}

#[tokio::test]
async fn webhooks_with_cert_manager_get_an_issuer_a_mounted_certificate_and_its_ca_injected()
-> anyhow::Result<()> {
    let docs = template(&[
        "--set",
        "webhooks.enabled=true",
        "--set",
        "webhooks.failurePolicy=Ignore",
        "--set",
        "webhooks.timeoutSeconds=5",
    ])
    .await?;
    let args = args(&docs)?;
    for expected in [
        "--webhook-port=9443",
        &format!("--webhook-cert-dir={CERT_DIR}"),
    ] {
        assert!(
            args.iter().any(|a| a == expected),
            "{expected} missing from {args:?}"
        );
    }
    assert!(
        !args.iter().any(|a| a == "--webhook-self-signed"),
        "{args:?}"
    );
    assert_served(&docs)?;

    let issuer = the(&docs, "Issuer")?;
    assert!(issuer["spec"]["selfSigned"].is_mapping());
    let certificate = named(&docs, "Certificate", CERTIFICATE)?;
    assert_eq!(
        certificate["spec"]["secretName"].as_str(),
        Some(CERTIFICATE)
    );
    assert_eq!(
        strings(&certificate["spec"]["dnsNames"]),
        [
            "cmg-configmap-generator-webhook.default.svc",
            "cmg-configmap-generator-webhook.default.svc.cluster.local"
        ]
    );
    assert_eq!(
        certificate["spec"]["issuerRef"]["name"].as_str(),
        issuer["metadata"]["name"].as_str()
    );

    // The Secret is mounted where --webhook-cert-dir points.
    let deployment = the(&docs, "Deployment")?;
    let volumes = &deployment["spec"]["template"]["spec"]["volumes"];
    let volume = volumes
        .as_sequence()
        .into_iter()
        .flatten()
        .find(|v| v["secret"]["secretName"].as_str() == Some(CERTIFICATE))
        .ok_or_else(|| anyhow::anyhow!("the certificate's Secret is not a volume"))?;
    let mounts = &manager(deployment)?["volumeMounts"];
    assert!(
        mounts
            .as_sequence()
            .into_iter()
            .flatten()
            .any(|m| m["name"] == volume["name"] && m["mountPath"].as_str() == Some(CERT_DIR)),
        "{mounts:?}"
    );

    let inject = format!("default/{CERTIFICATE}");
    let crd = the(&docs, "CustomResourceDefinition")?;
    assert_eq!(crd["metadata"]["name"].as_str(), Some(CRD_NAME));
    assert_converts_through_the_service(crd);
    for object in assert_configurations_call_the_service(&docs)?
        .into_iter()
        .chain([crd])
    {
        assert_eq!(
            object["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].as_str(),
            Some(inject.as_str()),
            "{}",
            object["kind"].as_str().unwrap_or("?")
        );
    }
    assert_eq!(
        crd["metadata"]["annotations"]["helm.sh/resource-policy"].as_str(),
        Some("keep"),
        "the injection annotation joins the keep policy, not replaces it"
    );
    assert!(!is_named(
        &docs,
        "ClusterRole",
        "cmg-configmap-generator-webhook-ca"
    ));

    // An Issuer of the user's replaces the chart's self-signed one.
    let own = template(&[
        "--set",
        "webhooks.enabled=true",
        "--set",
        "webhooks.certManager.issuerRef.name=company-ca",
        "--set",
        "webhooks.certManager.issuerRef.kind=ClusterIssuer",
    ])
    .await?;
    assert!(!kinds(&own).contains("Issuer"));
    let issuer_ref = &named(&own, "Certificate", CERTIFICATE)?["spec"]["issuerRef"];
    assert_eq!(issuer_ref["name"].as_str(), Some("company-ca"));
    assert_eq!(issuer_ref["kind"].as_str(), Some("ClusterIssuer"));
    Ok(())
}

#[tokio::test]
async fn self_signed_webhooks_may_patch_their_own_configurations_and_crd_and_nothing_else()
-> anyhow::Result<()> {
    let docs = template(&[
        "--set",
        "webhooks.enabled=true",
        "--set",
        "webhooks.certManager.enabled=false",
        "--set",
        "webhooks.failurePolicy=Ignore",
        "--set",
        "webhooks.timeoutSeconds=5",
    ])
    .await?;
    assert!(args(&docs)?.contains(&"--webhook-self-signed".to_owned()));
    assert_served(&docs)?;
    for kind in ["Issuer", "Certificate"] {
        assert!(
            !kinds(&docs).contains(kind),
            "{kind} rendered without cert-manager"
        );
    }
    let deployment = the(&docs, "Deployment")?;
    assert!(
        !deployment["spec"]["template"]["spec"]["volumes"]
            .as_sequence()
            .into_iter()
            .flatten()
            .any(|v| !v["secret"].is_null()),
        "no Secret is mounted: the operator makes its certificate"
    );
    let configurations = assert_configurations_call_the_service(&docs)?;
    for configuration in &configurations {
        assert!(
            configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].is_null()
        );
    }
    let names = |kind: &str| -> anyhow::Result<String> {
        Ok(the(&docs, kind)?["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned())
    };
    let role = named(&docs, "ClusterRole", "cmg-configmap-generator-webhook-ca")?;
    assert_eq!(
        rules(role),
        [
            format!(
                "admissionregistration.k8s.io | mutatingwebhookconfigurations |  | get,patch | {}",
                names("MutatingWebhookConfiguration")?
            ),
            format!(
                "admissionregistration.k8s.io | validatingwebhookconfigurations |  | get,patch | {}",
                names("ValidatingWebhookConfiguration")?
            ),
            format!("apiextensions.k8s.io | customresourcedefinitions |  | get,patch | {CRD_NAME}"),
        ]
    );
    bound_to_the_operator(&docs, "cmg-configmap-generator-webhook-ca")?;
    Ok(())
}

#[tokio::test]
async fn the_values_schema_refuses_bad_secure_serving_values() -> anyhow::Result<()> {
    let chart = chart_dir();
    for bad in [
        "metrics.secure=yes",
        "webhooks.failurePolicy=Sometimes",
        "webhooks.timeoutSeconds=31",
        "webhooks.certManager.duration=forever",
        "webhooks.certManager.issuerRef.kind=Vault",
    ] {
        let rendered = helm(&["template", "cmg", path_str(&chart)?, "--set", bad]).await;
        let error = rendered.expect_err(bad).to_string();
        assert!(
            error.contains("values don't meet the specifications of the schema"),
            "{bad}: {error}"
        );
    }
    Ok(())
}
