//! `cargo kubeward create webhook`: a validator, a defaulter or the conversion of a custom resource.

use std::path::Path;

use anyhow::{Context as _, bail};

use crate::plan::Plan;
use crate::project::{self, Project, Webhook};
use crate::registry;
use crate::template::render;

/// The chart's value that `create webhook` turns on, exactly as `init` wrote it.
const WEBHOOKS_OFF: &str = "webhooks:\n  # -- Serve the operator's admission webhooks";
const ENABLED_OFF: &str = "\n  enabled: false\n";

/// What `create webhook` is asked for.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) kind: &'a str,
    pub(crate) defaulting: bool,
    pub(crate) validation: bool,
    pub(crate) conversion: bool,
}

/// The plan of `create webhook` in the project at `root`.
///
/// # Errors
/// No project at `root`, no such custom resource in it, webhooks of that kind already, no
/// webhook asked for, or `--conversion` of a kind with one version.
pub(crate) fn plan(root: &Path, request: &Request<'_>) -> anyhow::Result<Plan> {
    let mut project = Project::read(root)?;
    let kind = request.kind;
    if !request.defaulting && !request.validation && !request.conversion {
        bail!("name the webhooks to make: --defaulting, --validation, --conversion");
    }
    let Some(api) = project.apis.iter().find(|a| a.name == kind) else {
        bail!(
            "the project has no custom resource {kind} ({}): run `cargo kubeward create api \
             --version v1alpha1 --kind {kind}` first; nothing was changed",
            project::FILE
        );
    };
    let module = api.module();
    let admission = request.defaulting || request.validation;
    if let Some(had) = project.webhooks.iter().find(|w| w.kind == kind) {
        if admission && (had.defaulting || had.validation) {
            bail!(
                "{kind} has admission webhooks already (src/webhook/{module}.rs): add to them \
                 by hand; nothing was changed"
            );
        }
        if request.conversion && had.conversion {
            bail!("{kind} has its conversion webhook already; nothing was changed");
        }
    }
    if request.conversion && !project.versions.iter().any(|v| v.name == kind) {
        bail!(
            "{kind} has one version, so there is nothing to convert: add another with \
             `cargo kubeward create api --version v1beta1 --kind {kind}` first; nothing was \
             changed"
        );
    }
    let values = [("kind", kind), ("module", module.as_str())];
    let t = |template: &str| render(template, &values);
    let traits = match (request.defaulting, request.validation) {
        (true, true) => "Defaulter, Validator",
        (true, false) => "Defaulter",
        _ => "Validator",
    };
    let mut code = render(
        include_str!("../templates/webhook/head.rs"),
        &[("kind", kind), ("module", &module), ("traits", traits)],
    );
    let mut tests = t(include_str!("../templates/webhook/tests_head.rs"));
    if request.validation {
        code.push_str(&t(include_str!("../templates/webhook/validator.rs")));
        tests.push_str(include_str!("../templates/webhook/tests_validator.rs"));
    }
    if request.defaulting {
        code.push_str(&t(include_str!("../templates/webhook/defaulter.rs")));
        tests.push_str(include_str!("../templates/webhook/tests_defaulter.rs"));
    }
    code.push_str(&tests);
    code.push_str("}\n");

    let first = !project.has_webhooks();
    match project.webhooks.iter_mut().find(|w| w.kind == kind) {
        Some(had) => {
            had.defaulting |= request.defaulting;
            had.validation |= request.validation;
            had.conversion |= request.conversion;
        }
        None => project.webhooks.push(Webhook {
            kind: kind.to_owned(),
            defaulting: request.defaulting,
            validation: request.validation,
            conversion: request.conversion,
        }),
    }
    let mut plan = Plan::new(root);
    if admission {
        plan.create(format!("src/webhook/{module}.rs"), code);
    }
    plan.replace(project::FILE, project.render());
    plan.replace(
        "src/lib.rs",
        registry::carried(root, "src/lib.rs", &registry::lib_rs(&project))?,
    );
    plan.replace(
        "tests/integration/main.rs",
        registry::carried(
            root,
            "tests/integration/main.rs",
            &registry::tests_main_rs(&project),
        )?,
    );
    if first {
        plan.replace(
            "Cargo.toml",
            with_webhooks_feature(&read(root, "Cargo.toml")?)?,
        );
        let values = root.join("charts").join(&project.name).join("values.yaml");
        let values_path = Path::new("charts").join(&project.name).join("values.yaml");
        let text = std::fs::read_to_string(&values)
            .with_context(|| format!("reading {}", values.display()))?;
        plan.replace(values_path, webhooks_on(&text)?);
    }
    Ok(plan)
}

fn read(root: &Path, file: &str) -> anyhow::Result<String> {
    let path = root.join(file);
    std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
}

/// `manifest` with kubeward's `webhooks` feature on (the webhook server is opt-in).
fn with_webhooks_feature(manifest: &str) -> anyhow::Result<String> {
    let mut done = false;
    let lines: Vec<String> = manifest
        .lines()
        .map(|line| {
            if done || !line.starts_with("kubeward = ") {
                return line.to_owned();
            }
            done = true;
            if let Some(table) = line.strip_suffix(" }") {
                format!("{table}, features = [\"webhooks\"] }}")
            } else {
                let version = line.trim_start_matches("kubeward = ");
                format!("kubeward = {{ version = {version}, features = [\"webhooks\"] }}")
            }
        })
        .collect();
    if !done {
        bail!(
            "Cargo.toml has no `kubeward = ...` line under [dependencies] to add the webhooks feature to; nothing was changed"
        );
    }
    Ok(lines.join("\n") + "\n")
}

/// The chart's values with `webhooks.enabled` on.
fn webhooks_on(values: &str) -> anyhow::Result<String> {
    let at = values.find(WEBHOOKS_OFF).context(
        "the chart's values.yaml has no `webhooks:` section as `cargo kubeward init` wrote it; nothing was changed",
    )?;
    let rest = &values[at..];
    let Some(off) = rest.find(ENABLED_OFF) else {
        bail!(
            "the chart's `webhooks.enabled` is not `false` as `cargo kubeward init` wrote it; nothing was changed"
        );
    };
    let split = at + off;
    Ok(format!(
        "{}\n  enabled: true\n{}",
        &values[..split],
        &values[split + ENABLED_OFF.len()..]
    ))
}
