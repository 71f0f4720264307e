//! `cargo kubeward create api`: a custom resource with its controller, or a controller of a kind
//! the API server already serves (`--resource=false`).

use std::path::Path;

use anyhow::{Context as _, bail};

use crate::names;
use crate::plan::Plan;
use crate::project::{self, Kind, Project};
use crate::registry;
use crate::template::render;

/// What `create api` is asked for.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    /// The API group; the project's own for custom resources.
    pub(crate) group: Option<&'a str>,
    pub(crate) version: &'a str,
    pub(crate) kind: &'a str,
    /// A new custom resource (`--resource`), or an existing kind.
    pub(crate) resource: bool,
    /// A controller (`--controller`).
    pub(crate) controller: bool,
}

/// The plan of `create api` in the project at `root`.
///
/// # Errors
/// No project at `root`, a kind or version Kubernetes would refuse, a kind the project has
/// already, or a combination that makes nothing.
pub(crate) fn plan(root: &Path, request: &Request<'_>) -> anyhow::Result<Plan> {
    let mut project = Project::read(root)?;
    let Request { version, kind, .. } = *request;
    if !names::is_kind(kind) {
        bail!(
            "{kind:?} is not a kind name: start with an upper-case letter, then letters and digits"
        );
    }
    if !names::is_version(version) {
        bail!("{version:?} is not an API version such as v1, v1alpha1 or v2beta1");
    }
    let module = names::snake(kind);
    let hub = project.apis.iter().find(|k| k.name == kind).cloned();
    if let Some(hub) = hub.filter(|hub| request.resource && hub.version != version) {
        let mut plan = Plan::new(root);
        let spoke = other_version(&mut plan, root, &project, &hub, version)?;
        project.versions.push(spoke);
        plan.replace(project::FILE, project.render());
        plan.replace(
            "src/lib.rs",
            registry::carried(root, "src/lib.rs", &registry::lib_rs(&project))?,
        );
        return Ok(plan);
    }
    if !request.controller {
        bail!("a resource without a controller is not generated yet: leave --controller on");
    }
    let taken = project
        .apis
        .iter()
        .chain(&project.controllers)
        .find(|k| k.module() == module);
    if let Some(taken) = taken {
        bail!(
            "the project has {} {}/{} already ({}), so nothing was changed; change its code \
             instead (src/controller/{module}.rs)",
            taken.name,
            taken.group,
            taken.version,
            project::FILE
        );
    }
    let mut plan = Plan::new(root);
    let kind = if request.resource {
        custom_resource(&mut plan, &project, request)?
    } else {
        existing(&mut plan, request)?
    };
    if request.resource {
        project.apis.push(kind);
    } else {
        project.controllers.push(kind);
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
    Ok(plan)
}

/// Adds a custom resource's files to `plan`: resource, reconciler, sample, test.
fn custom_resource(
    plan: &mut Plan,
    project: &Project,
    request: &Request<'_>,
) -> anyhow::Result<Kind> {
    let (version, kind) = (request.version, request.kind);
    let module = names::snake(kind);
    let group = request.group.unwrap_or(&project.group).to_owned();
    if group != project.group {
        bail!(
            "custom resources of this project are in the group {} (from init), not {group}",
            project.group
        );
    }
    let sample = format!("{group}_{version}_{module}.yaml");
    let kebab = names::kebab(kind);
    let crate_name = project.crate_name();
    let values = [
        ("group", group.as_str()),
        ("version", version),
        ("kind", kind),
        ("module", module.as_str()),
        ("kebab", kebab.as_str()),
        ("sample", sample.as_str()),
        ("crate", crate_name.as_str()),
    ];
    let t = |template: &str| render(template, &values);
    plan.create(
        format!("src/api/{module}.rs"),
        t(include_str!("../templates/api/resource.rs")),
    );
    plan.create(
        format!("src/controller/{module}.rs"),
        t(include_str!("../templates/api/reconciler.rs")),
    );
    plan.create(
        format!("config/samples/{sample}"),
        t(include_str!("../templates/api/sample.yaml")),
    );
    plan.create(
        format!("tests/integration/{module}.rs"),
        t(include_str!("../templates/api/test.rs")),
    );
    Ok(Kind {
        group,
        version: version.to_owned(),
        name: kind.to_owned(),
    })
}

/// Adds the controller of a kind the API server serves to `plan`.
fn existing(plan: &mut Plan, request: &Request<'_>) -> anyhow::Result<Kind> {
    let (version, kind) = (request.version, request.kind);
    let module = names::snake(kind);
    let Some(group) = request.group else {
        bail!(
            "--resource=false controls a kind the API server serves: name its --group (`core` for Pods, ConfigMaps, ...)"
        );
    };
    let openapi = names::openapi_module(group);
    let api_version = match group {
        "" | "core" => version.to_owned(),
        _ => format!("{group}/{version}"),
    };
    let type_path = format!("k8s_openapi::api::{openapi}::{version}::{kind}");
    let values = [
        ("kind", kind),
        ("api_version", api_version.as_str()),
        ("type_path", type_path.as_str()),
    ];
    plan.create(
        format!("src/controller/{module}.rs"),
        render(
            include_str!("../templates/controller/reconciler.rs"),
            &values,
        ),
    );
    Ok(Kind {
        group: if group.is_empty() { "core" } else { group }.to_owned(),
        version: version.to_owned(),
        name: kind.to_owned(),
    })
}

/// Adds another version of the custom resource `hub` to `plan`: its type with the conversion
/// to and from the hub, and the hub's `versions(...)` naming it.
fn other_version(
    plan: &mut Plan,
    root: &Path,
    project: &Project,
    hub: &Kind,
    version: &str,
) -> anyhow::Result<Kind> {
    let (kind, module) = (hub.name.as_str(), hub.module());
    if let Some(other) = project.versions.iter().find(|v| v.name == kind) {
        bail!(
            "{kind} has a second version already ({}); add more by hand (see the book's \
             Conversion page), nothing was changed",
            other.version
        );
    }
    let spoke = Kind {
        group: hub.group.clone(),
        version: version.to_owned(),
        name: kind.to_owned(),
    };
    let spoke_module = spoke.version_module();
    let hub_file = format!("src/api/{module}.rs");
    let path = root.join(&hub_file);
    let code =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let spec = format!("pub struct {kind}Spec {{");
    if code.contains("versions(") || !code.contains(&spec) {
        bail!(
            "{hub_file} has a `versions(...)` attribute already, or no `{spec}`: add the \
             version by hand (see the book's Conversion page); nothing was changed"
        );
    }
    let attribute = format!("#[controller(versions(crate::api::{spoke_module}::{kind}))]\n");
    plan.replace(
        &hub_file,
        code.replacen(&spec, &format!("{attribute}{spec}"), 1),
    );
    let values = [
        ("group", hub.group.as_str()),
        ("version", version),
        ("hub_version", hub.version.as_str()),
        ("kind", kind),
        ("module", module.as_str()),
    ];
    plan.create(
        format!("src/api/{spoke_module}.rs"),
        render(include_str!("../templates/api/version.rs"), &values),
    );
    Ok(spoke)
}
