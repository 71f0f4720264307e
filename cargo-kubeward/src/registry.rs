//! The files `cargo kubeward` and its user share: `src/lib.rs`, which lists the kinds,
//! controllers and webhooks and registers them with the manager (so `main` never changes), and
//! `tests/integration/main.rs`, which lists the tests and holds their helpers. Each `create`
//! rewrites their marked regions (see `regions`) and keeps every other line.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;

use crate::project::{Kind, Project};

/// `fresh`, the file `path` as the tool writes it now, carried into the project at `root`: its
/// regions in place of the file's, the user's lines kept. `fresh` itself when there is no file
/// (the plan then refuses to replace it).
///
/// # Errors
/// A marker is missing from the file (the error names both), or reading it fails.
pub(crate) fn carried(root: &Path, path: &str, fresh: &str) -> anyhow::Result<String> {
    match std::fs::read_to_string(root.join(path)) {
        Ok(existing) => crate::regions::carry(path, fresh, &existing),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(fresh.to_owned()),
        Err(e) => Err(e).with_context(|| format!("reading {}", root.join(path).display())),
    }
}

/// `src/lib.rs` of `project`.
pub(crate) fn lib_rs(project: &Project) -> String {
    let mut out = format!(
        "//! The {} operator: its custom resources, controllers and webhooks.\n//!\n\
         //! `cargo kubeward create` rewrites the lines between each `// kubeward:scaffold:NAME`\n\
         //! line and its `:end`; the other lines are yours (`mod util;`, more registrations).\n\n\
         use kubeward::crd::{{CustomResourceDefinition, Definition as _}};\n\
         use kubeward::manager::Manager;\n\n",
        project.name
    );
    let apis: Vec<String> = project.apis.iter().map(Kind::module).collect();
    let mut api_modules = apis.clone();
    api_modules.extend(project.versions.iter().map(Kind::version_module));
    let controllers: Vec<String> = project.controllers.iter().map(Kind::module).collect();
    let webhooks: Vec<String> = project
        .webhooks
        .iter()
        .filter(|w| w.defaulting || w.validation)
        .map(|w| crate::names::snake(&w.kind))
        .collect();
    let mut reconcilers = apis.clone();
    reconcilers.extend(controllers.iter().cloned());
    let modules = [
        module(
            "api",
            "The custom resources: what each asks for and what it reports.",
            &api_modules,
        ),
        module(
            "controller",
            "The reconcilers: the operator's domain logic.",
            &reconcilers,
        ),
        module("webhook", "The admission webhooks.", &webhooks),
    ];
    out.push_str("// kubeward:scaffold:modules\n");
    let modules: Vec<String> = modules.into_iter().flatten().collect();
    out.push_str(&modules.join("\n"));
    out.push_str("// kubeward:scaffold:modules:end\n");

    out.push_str("\n/// Adds every controller and webhook of the operator to `manager`.\n");
    out.push_str(
        "///\n/// # Errors\n/// What [`Manager::add`] refuses, e.g. two controllers of one name.\n",
    );
    out.push_str("pub fn register(manager: &Manager) -> Result<(), kubeward::manager::Error> {\n");
    out.push_str("    // kubeward:scaffold:register\n");
    if project.apis.is_empty() && project.controllers.is_empty() && !project.has_webhooks() {
        out.push_str("    let _ = manager; // `cargo kubeward create api` adds controllers here\n");
    }
    for api in &project.apis {
        let (m, k) = (api.module(), &api.name);
        let _ = writeln!(
            out,
            "    manager.add(api::{m}::{k}::controller(controller::{m}::{k}Reconciler))?;"
        );
    }
    for c in &project.controllers {
        let _ = writeln!(
            out,
            "    manager.add(controller::{}::controller())?;",
            c.module()
        );
    }
    for w in &project.webhooks {
        let (m, k) = (crate::names::snake(&w.kind), &w.kind);
        if w.validation {
            let _ = writeln!(
                out,
                "    manager.add_validator::<api::{m}::{k}>(webhook::{m}::{k}Validator)?;"
            );
        }
        if w.defaulting {
            let _ = writeln!(
                out,
                "    manager.add_defaulter::<api::{m}::{k}>(webhook::{m}::{k}Defaulter)?;"
            );
        }
        if w.conversion {
            let _ = writeln!(
                out,
                "    manager.add_conversion(api::{m}::{k}::converter())?;"
            );
        }
    }
    out.push_str("    // kubeward:scaffold:register:end\n");
    out.push_str(
        "    Ok(())\n}\n\n/// The CustomResourceDefinitions of the operator's custom resources.\n",
    );
    out.push_str("#[must_use]\npub fn crds() -> Vec<CustomResourceDefinition> {\n    vec![\n");
    out.push_str("        // kubeward:scaffold:crds\n");
    for a in &project.apis {
        let _ = writeln!(
            out,
            "        api::{}::{}::definition(),",
            a.module(),
            a.name
        );
    }
    out.push_str("        // kubeward:scaffold:crds:end\n    ]\n}\n");
    out
}

/// A public inline module `name` whose submodules are files under `src/name/`; none without
/// files.
fn module(name: &str, doc: &str, files: &[String]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut out = format!("/// {doc}\npub mod {name} {{\n");
    for file in files {
        let _ = writeln!(out, "    pub mod {file};");
    }
    out.push_str("}\n");
    Some(out)
}

/// `tests/integration/main.rs` of `project`: one module per custom resource, and their helpers.
pub(crate) fn tests_main_rs(project: &Project) -> String {
    let mut out = format!(
        "//! Tests of the {} operator against a local control plane (kubeward's testing kit):\n\
         //! one module per kind. `cargo kubeward create` rewrites the lines between each\n\
         //! `// kubeward:scaffold:NAME` line and its `:end`; the other lines are yours.\n\n",
        project.name
    );
    out.push_str("// kubeward:scaffold:tests\n");
    for api in &project.apis {
        let _ = writeln!(out, "mod {};", api.module());
    }
    out.push_str("// kubeward:scaffold:tests:end\n\n// kubeward:scaffold:helpers\n");
    // No helpers without a test to use them: they would be dead code.
    if !project.apis.is_empty() {
        let webhook_args = if project.has_webhooks() {
            concat!(
                "            // No webhook server: the tests' API server does not call the operator.\n",
                "            .args([\"--webhook-port\", \"0\"])\n",
            )
        } else {
            ""
        };
        out.push_str(&crate::template::render(
            include_str!("../templates/init/tests/integration/helpers.rs"),
            &[
                ("name", &project.name),
                ("crate", &project.crate_name()),
                ("webhook_args", webhook_args),
            ],
        ));
    }
    out.push_str("// kubeward:scaffold:helpers:end\n");
    out
}
