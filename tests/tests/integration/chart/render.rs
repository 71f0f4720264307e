//! The chart lints and renders what its values ask for, and its values schema and image agree with it.

use std::collections::BTreeSet;

use serde_norway::Value;

use super::{
    CRD_NAME, SERVICE_MONITOR, all_on_values, chart_dir, helm, kinds, manager, path_str, strings,
    template, the,
};

#[tokio::test]
async fn the_chart_lints_with_default_values_and_with_every_feature_on() -> anyhow::Result<()> {
    let chart = chart_dir();
    let chart = path_str(&chart)?;
    let all_on = all_on_values();
    let defaults = helm(&["lint", "--strict", chart]).await?;
    assert!(defaults.contains("0 chart(s) failed"), "{defaults}");
    let every = helm(&["lint", "--strict", chart, "--values", path_str(&all_on)?]).await?;
    assert!(every.contains("0 chart(s) failed"), "{every}");
    Ok(())
}

#[tokio::test]
async fn default_values_render_the_operator_and_none_of_the_optional_extras() -> anyhow::Result<()>
{
    let docs = template(&["--api-versions", SERVICE_MONITOR]).await?;
    let expected: BTreeSet<String> = [
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "Deployment",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    .map(str::to_owned)
    .into();
    assert_eq!(kinds(&docs), expected);

    let crd = the(&docs, "CustomResourceDefinition")?;
    assert_eq!(crd["metadata"]["name"].as_str(), Some(CRD_NAME));
    assert_eq!(
        crd["metadata"]["annotations"]["helm.sh/resource-policy"].as_str(),
        Some("keep"),
        "the CRD must be kept on uninstall by default"
    );
    for doc in &docs {
        let labels = &doc["metadata"]["labels"];
        for label in [
            "app.kubernetes.io/name",
            "app.kubernetes.io/instance",
            "app.kubernetes.io/version",
            "app.kubernetes.io/managed-by",
            "helm.sh/chart",
        ] {
            assert!(
                labels[label].as_str().is_some(),
                "{} has no {label} label",
                doc["kind"].as_str().unwrap_or("?")
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn every_optional_feature_renders_when_turned_on_and_its_api_is_served() -> anyhow::Result<()>
{
    let all_on = all_on_values();
    let values = path_str(&all_on)?;
    let docs = template(&["--values", values, "--api-versions", SERVICE_MONITOR]).await?;
    for kind in [
        "ServiceMonitor",
        "PodDisruptionBudget",
        "NetworkPolicy",
        "ConfigMap",
    ] {
        the(&docs, kind)?;
    }
    let crd = the(&docs, "CustomResourceDefinition")?;
    assert!(
        crd["metadata"]["annotations"]["helm.sh/resource-policy"].is_null(),
        "crds.keep=false must drop the keep policy"
    );

    let dashboard = the(&docs, "ConfigMap")?;
    let json = dashboard["data"]["configmap-generator.json"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("the dashboard ConfigMap holds no JSON"))?;
    let dashboard: serde_json::Value = serde_json::from_str(json)?;
    let exprs: Vec<&str> = dashboard["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .filter_map(|t| t["expr"].as_str())
        .collect();
    for metric in [
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "workqueue_depth",
        "controller_runtime_reconcile_time_seconds_bucket",
        "leader_election_master_status",
    ] {
        assert!(
            exprs.iter().any(|e| e.contains(metric)),
            "no dashboard panel queries {metric}: {exprs:?}"
        );
    }

    // Without the API the ServiceMonitor is skipped, not rendered into a failing install.
    let without_api = template(&["--values", values]).await?;
    assert!(!kinds(&without_api).contains("ServiceMonitor"));
    Ok(())
}

#[tokio::test]
async fn the_rendered_deployment_runs_a_restricted_non_root_pod_with_args_from_values()
-> anyhow::Result<()> {
    let docs = template(&[]).await?;
    let deployment = the(&docs, "Deployment")?;
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"].as_bool(), Some(true));
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"].as_str(),
        Some("RuntimeDefault")
    );
    assert_eq!(pod["automountServiceAccountToken"].as_bool(), Some(true));

    let container = manager(deployment)?;
    let security = &container["securityContext"];
    assert_eq!(security["runAsNonRoot"].as_bool(), Some(true));
    assert_eq!(security["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(security["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(strings(&security["capabilities"]["drop"]), ["ALL"]);
    assert!(security["capabilities"]["add"].is_null());
    assert_eq!(
        security["seccompProfile"]["type"].as_str(),
        Some("RuntimeDefault")
    );
    assert!(security["privileged"].as_bool() != Some(true));
    assert_eq!(
        container["livenessProbe"]["httpGet"]["path"].as_str(),
        Some("/healthz")
    );
    assert_eq!(
        container["readinessProbe"]["httpGet"]["path"].as_str(),
        Some("/readyz")
    );
    assert!(container["resources"]["requests"]["memory"].is_string());
    assert!(container["resources"]["limits"]["memory"].is_string());

    let args = strings(&container["args"]);
    for expected in [
        "--metrics-bind-address=:8080",
        "--health-probe-bind-address=:8081",
        "--leader-elect",
        "--leader-election-id=cmg-configmap-generator",
        "--leader-election-namespace=default",
        "--leader-election-lease-duration=15s",
        "--leader-election-renew-deadline=10s",
        "--leader-election-retry-period=2s",
        "--leader-election-on-loss=exit",
        "--log-format=json",
        "--log-level=info",
    ] {
        assert!(args.contains(&expected), "{expected} missing from {args:?}");
    }
    assert!(
        !args.iter().any(|a| a.starts_with("--watch-namespaces")),
        "all namespaces are watched by default: {args:?}"
    );

    // Values change the arguments.
    let docs = template(&[
        "--set",
        "leaderElection.enabled=false,metrics.enabled=false",
        "--set",
        "logging.format=text,extraArgs[0]=--extra",
    ])
    .await?;
    let args = strings(&manager(the(&docs, "Deployment")?)?["args"]).join(" ");
    assert!(args.contains("--metrics-bind-address=0"), "{args}");
    assert!(args.contains("--log-format=text"), "{args}");
    assert!(args.ends_with("--extra"), "{args}");
    assert!(!args.contains("--leader-elect"), "{args}");
    assert!(!kinds(&docs).contains("Service"));
    Ok(())
}

#[tokio::test]
async fn a_namespace_set_renders_a_role_in_each_namespace_and_no_cluster_role() -> anyhow::Result<()>
{
    // Secure metrics (on by default) keep their ClusterRoles: TokenReviews and
    // SubjectAccessReviews are cluster-scoped. Nothing else is granted cluster-wide.
    let with_metrics = template(&["--set", "watchNamespaces={team-a,team-b}"]).await?;
    let cluster_roles: Vec<&str> = with_metrics
        .iter()
        .filter(|d| d["kind"].as_str() == Some("ClusterRole"))
        .filter_map(|d| d["metadata"]["name"].as_str())
        .collect();
    assert!(
        cluster_roles
            .iter()
            .all(|name| name.ends_with("-metrics-auth") || name.ends_with("-metrics-reader")),
        "only the secure-metrics ClusterRoles: {cluster_roles:?}"
    );
    let docs = template(&[
        "--set",
        "watchNamespaces={team-a,team-b},leaderElection.enabled=false,metrics.enabled=false",
    ])
    .await?;
    let args = strings(&manager(the(&docs, "Deployment")?)?["args"]).join(" ");
    assert!(args.contains("--watch-namespaces=team-a,team-b"), "{args}");
    let kinds = kinds(&docs);
    assert!(
        !kinds.contains("ClusterRole") && !kinds.contains("ClusterRoleBinding"),
        "a namespace set needs no cluster-wide grant: {kinds:?}"
    );
    let generated: Value = serde_norway::from_str(&std::fs::read_to_string(
        chart_dir().join("files/rbac-rules.yaml"),
    )?)?;
    let in_namespaces = |kind: &str| -> Vec<&Value> {
        docs.iter()
            .filter(|d| d["kind"].as_str() == Some(kind))
            .collect()
    };
    let namespace = |d: &Value| d["metadata"]["namespace"].as_str().map(str::to_owned);
    let roles = in_namespaces("Role");
    assert_eq!(
        roles.iter().map(|r| namespace(r)).collect::<Vec<_>>(),
        [Some("team-a".to_owned()), Some("team-b".to_owned())]
    );
    for role in &roles {
        assert_eq!(
            role["rules"], generated["rules"],
            "the generated rules in {role:?}"
        );
    }
    let bindings = in_namespaces("RoleBinding");
    assert_eq!(bindings.len(), 2, "{bindings:?}");
    for binding in bindings {
        assert_eq!(binding["roleRef"]["kind"].as_str(), Some("Role"));
        assert_eq!(binding["roleRef"]["name"], roles[0]["metadata"]["name"]);
    }
    Ok(())
}

#[tokio::test]
async fn the_values_schema_rejects_values_of_the_wrong_type() -> anyhow::Result<()> {
    for (bad, path) in [
        ("replicaCount=three", "/replicaCount"),
        ("logging.format=xml", "/logging/format"),
        (
            "leaderElection.leaseDuration=soon",
            "/leaderElection/leaseDuration",
        ),
        ("leaderElection.onLoss=linger", "/leaderElection/onLoss"),
        ("metrics.enabeld=true", "/metrics"),
    ] {
        let err = template(&["--set-string", bad])
            .await
            .err()
            .ok_or_else(|| anyhow::anyhow!("`{bad}` was accepted"))?;
        let message = err.to_string();
        assert!(
            message.contains(&format!("at '{path}'")),
            "`{bad}` was rejected for another reason: {message}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn an_existing_service_account_must_be_named() -> anyhow::Result<()> {
    let err = template(&["--set", "serviceAccount.create=false"])
        .await
        .err()
        .ok_or_else(|| anyhow::anyhow!("an unnamed existing ServiceAccount was accepted"))?;
    assert!(
        err.to_string()
            .contains("serviceAccount.name is required when serviceAccount.create is false"),
        "{err}"
    );
    let docs = template(&[
        "--set",
        "serviceAccount.create=false,serviceAccount.name=existing",
    ])
    .await?;
    assert!(!kinds(&docs).contains("ServiceAccount"));
    let pod = &the(&docs, "Deployment")?["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"].as_str(), Some("existing"));
    // The operator's own binding, and (secure metrics being on) the one of the token reviews.
    let bindings: Vec<_> = docs
        .iter()
        .filter(|d| d["kind"].as_str() == Some("ClusterRoleBinding"))
        .collect();
    assert_eq!(bindings.len(), 2);
    for binding in bindings {
        assert_eq!(
            binding["subjects"][0]["name"].as_str(),
            Some("existing"),
            "RBAC must be granted to the existing ServiceAccount"
        );
    }
    Ok(())
}

/// The image cannot be built here (there is no container engine), so this checks what can be
/// checked without one: the final stage is minimal, runs as the chart's non-root user and starts
/// the operator binary that the builder stage builds.
#[tokio::test]
async fn the_dockerfile_builds_the_operator_into_a_minimal_image_run_by_the_charts_user()
-> anyhow::Result<()> {
    let dockerfile = std::fs::read_to_string(chart_dir().join("../../Dockerfile"))?;
    let instructions: Vec<&str> = dockerfile
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let last_from = instructions
        .iter()
        .rposition(|l| l.starts_with("FROM "))
        .ok_or_else(|| anyhow::anyhow!("the Dockerfile has no FROM"))?;
    assert!(last_from > 0, "the Dockerfile must be multi-stage");
    assert_eq!(instructions[last_from], "FROM scratch");
    let final_stage = &instructions[last_from..];
    let user = final_stage
        .iter()
        .find_map(|l| l.strip_prefix("USER "))
        .ok_or_else(|| anyhow::anyhow!("the final stage sets no USER"))?;

    let docs = template(&[]).await?;
    let pod = &the(&docs, "Deployment")?["spec"]["template"]["spec"]["securityContext"];
    let expected = format!(
        "{}:{}",
        pod["runAsUser"].as_u64().unwrap_or_default(),
        pod["runAsGroup"].as_u64().unwrap_or_default()
    );
    assert_eq!(
        user, expected,
        "the image and the chart disagree on the user"
    );
    assert!(!user.starts_with("0:"), "the image must not run as root");

    // The binary it builds and copies must be one the examples crate has (cargo names a binary
    // after its file, underscores included).
    let bin = dockerfile
        .split("-p kubeward-examples --bin ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or_else(|| anyhow::anyhow!("the builder stage must build the operator"))?;
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/src/bin")
        .join(format!("{bin}.rs"));
    assert!(
        source.exists(),
        "the Dockerfile builds --bin {bin}, which has no {source:?}"
    );
    assert!(
        dockerfile.contains(&format!("target/release/{bin} /configmap-generator")),
        "the image must copy the binary it built"
    );
    assert!(
        final_stage.contains(&r#"ENTRYPOINT ["/configmap-generator"]"#),
        "the image must start the operator"
    );
    Ok(())
}
