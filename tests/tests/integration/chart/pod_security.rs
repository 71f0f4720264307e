//! The operator's pod meets the `restricted` Pod Security Standard, whatever features are on.

use super::{all_on_values, path_str, strings, template, the};

/// The checks of the `restricted` Pod Security Standard that a pod template can fail; kube-apiserver
/// v1.20 has no `PodSecurity` admission to ask, so they are spelled out here.
fn restricted_violations(pod: &serde_norway::Value) -> Vec<String> {
    const ALLOWED_VOLUMES: [&str; 8] = [
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    ];
    let mut violations = Vec::new();
    for host in ["hostNetwork", "hostPID", "hostIPC"] {
        if pod[host].as_bool() == Some(true) {
            violations.push(format!("{host} is on"));
        }
    }
    for volume in pod["volumes"].as_sequence().into_iter().flatten() {
        let kinds: Vec<&str> = volume
            .as_mapping()
            .into_iter()
            .flatten()
            .filter_map(|(k, _)| k.as_str())
            .filter(|k| *k != "name")
            .collect();
        if !kinds.iter().all(|k| ALLOWED_VOLUMES.contains(k)) {
            violations.push(format!("volume of type {kinds:?}"));
        }
    }
    let pod_security = &pod["securityContext"];
    for container in pod["containers"].as_sequence().into_iter().flatten() {
        let name = container["name"].as_str().unwrap_or("?");
        let security = &container["securityContext"];
        let inherited = |key: &str| {
            if security[key].is_null() {
                pod_security[key].clone()
            } else {
                security[key].clone()
            }
        };
        if inherited("runAsNonRoot").as_bool() != Some(true) {
            violations.push(format!("{name}: runAsNonRoot is not true"));
        }
        if inherited("runAsUser").as_u64() == Some(0) {
            violations.push(format!("{name}: runs as uid 0"));
        }
        if inherited("seccompProfile")["type"].as_str() != Some("RuntimeDefault") {
            violations.push(format!("{name}: seccomp profile is not RuntimeDefault"));
        }
        if security["allowPrivilegeEscalation"].as_bool() != Some(false) {
            violations.push(format!("{name}: privilege escalation is allowed"));
        }
        if security["privileged"].as_bool() == Some(true) {
            violations.push(format!("{name}: privileged"));
        }
        if !strings(&security["capabilities"]["drop"]).contains(&"ALL") {
            violations.push(format!("{name}: does not drop ALL capabilities"));
        }
        let added = strings(&security["capabilities"]["add"]);
        if added.iter().any(|c| *c != "NET_BIND_SERVICE") {
            violations.push(format!("{name}: adds capabilities {added:?}"));
        }
        if container["ports"]
            .as_sequence()
            .into_iter()
            .flatten()
            .any(|p| !p["hostPort"].is_null())
        {
            violations.push(format!("{name}: uses a host port"));
        }
    }
    violations
}

#[tokio::test]
async fn the_pod_meets_the_restricted_pod_security_standard_with_any_features_on()
-> anyhow::Result<()> {
    let all_on = all_on_values();
    for extra in [vec![], vec!["--values", path_str(&all_on)?]] {
        let docs = template(&extra).await?;
        let pod = &the(&docs, "Deployment")?["spec"]["template"]["spec"];
        assert_eq!(
            restricted_violations(pod),
            Vec::<String>::new(),
            "{extra:?}"
        );
    }
    // The check itself notices a pod that breaks the standard.
    let docs = template(&[
        "--set",
        "securityContext.allowPrivilegeEscalation=true",
        "--set-json",
        r#"extraVolumes=[{"name":"host","hostPath":{"path":"/"}}]"#,
    ])
    .await?;
    let violations = restricted_violations(&the(&docs, "Deployment")?["spec"]["template"]["spec"]);
    assert_eq!(violations.len(), 2, "{violations:?}");
    Ok(())
}
