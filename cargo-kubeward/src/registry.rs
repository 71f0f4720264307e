//! The files `cargo kubeward` rewrites after each `create`: `src/lib.rs`, which lists the kinds,
//! controllers and webhooks and registers them with the manager (so `main` never changes), and
//! `tests/integration/main.rs`, which lists the tests and holds their helpers.

use std::fmt::Write as _;

use crate::project::{Kind, Project};

/// `src/lib.rs` of `project`.
pub(crate) fn lib_rs(project: &Project) -> String {
    let mut out = format!(
        "//! The {} operator: its custom resources, controllers and webhooks.\n//!\n\
         //! `cargo kubeward create` rewrites this file; write your code in the modules it lists.\n\n\
         use kubeward::crd::{{CustomResourceDefinition, Definition as _}};\n\
         use kubeward::manager::Manager;\n",
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
    module(
        &mut out,
        "api",
        "The custom resources: what each asks for and what it reports.",
        &api_modules,
    );
    let mut reconcilers = apis.clone();
    reconcilers.extend(controllers.iter().cloned());
    module(
        &mut out,
        "controller",
        "The reconcilers: the operator's domain logic.",
        &reconcilers,
    );
    module(&mut out, "webhook", "The admission webhooks.", &webhooks);

    out.push_str("\n/// Adds every controller and webhook of the operator to `manager`.\n");
    out.push_str(
        "///\n/// # Errors\n/// What [`Manager::add`] refuses, e.g. two controllers of one name.\n",
    );
    out.push_str("pub fn register(manager: &Manager) -> Result<(), kubeward::manager::Error> {\n");
    if project.apis.is_empty() && project.controllers.is_empty() {
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
    out.push_str(
        "    Ok(())\n}\n\n/// The CustomResourceDefinitions of the operator's custom resources.\n",
    );
    out.push_str("#[must_use]\npub fn crds() -> Vec<CustomResourceDefinition> {\n");
    if project.apis.is_empty() {
        out.push_str("    Vec::new()\n");
    } else {
        let crds: Vec<String> = project
            .apis
            .iter()
            .map(|a| format!("api::{}::{}::definition()", a.module(), a.name))
            .collect();
        let _ = writeln!(out, "    vec![{}]", crds.join(", "));
    }
    out.push_str("}\n");
    out
}

/// A public inline module `name` whose submodules are files under `src/name/`.
fn module(out: &mut String, name: &str, doc: &str, files: &[String]) {
    if files.is_empty() {
        return;
    }
    let _ = write!(out, "\n/// {doc}\npub mod {name} {{\n");
    for file in files {
        let _ = writeln!(out, "    pub mod {file};");
    }
    out.push_str("}\n");
}

/// `tests/integration/main.rs` of `project`: one module per custom resource, and their helpers.
pub(crate) fn tests_main_rs(project: &Project) -> String {
    let mut out = format!(
        "//! Tests of the {} operator against a local control plane (kubeward's testing kit):\n\
         //! one module per kind. `cargo kubeward create` rewrites this file; write tests in the\n\
         //! modules it lists.\n",
        project.name
    );
    if project.apis.is_empty() {
        return out;
    }
    out.push('\n');
    for api in &project.apis {
        let _ = writeln!(out, "mod {};", api.module());
    }
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
    out
}
