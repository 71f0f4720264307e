//! `cargo kubeward init NAME --group GROUP`: a new operator project, in a new or empty folder.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::plan::Plan;
use crate::project::{self, Project};
use crate::registry;
use crate::template::render;

/// The chart's files, kept in `templates/init/chart/`.
const CHART: &[(&str, &str)] = &[
    (
        "Chart.yaml",
        include_str!("../templates/init/chart/Chart.yaml"),
    ),
    (
        "values.yaml",
        include_str!("../templates/init/chart/values.yaml"),
    ),
    (
        "values.schema.json",
        include_str!("../templates/init/chart/values.schema.json"),
    ),
    (
        "ci/all-on-values.yaml",
        include_str!("../templates/init/chart/ci/all-on-values.yaml"),
    ),
    (
        "files/crd.yaml",
        include_str!("../templates/init/chart/files/crd.yaml"),
    ),
    (
        "files/rbac-rules.yaml",
        include_str!("../templates/init/chart/files/rbac-rules.yaml"),
    ),
    (
        "templates/NOTES.txt",
        include_str!("../templates/init/chart/templates/NOTES.txt"),
    ),
    (
        "templates/_helpers.tpl",
        include_str!("../templates/init/chart/templates/_helpers.tpl"),
    ),
    (
        "templates/clusterrole.yaml",
        include_str!("../templates/init/chart/templates/clusterrole.yaml"),
    ),
    (
        "templates/clusterrolebinding.yaml",
        include_str!("../templates/init/chart/templates/clusterrolebinding.yaml"),
    ),
    (
        "templates/crd.yaml",
        include_str!("../templates/init/chart/templates/crd.yaml"),
    ),
    (
        "templates/deployment.yaml",
        include_str!("../templates/init/chart/templates/deployment.yaml"),
    ),
    (
        "templates/leader-election-rbac.yaml",
        include_str!("../templates/init/chart/templates/leader-election-rbac.yaml"),
    ),
    (
        "templates/metrics-auth-rbac.yaml",
        include_str!("../templates/init/chart/templates/metrics-auth-rbac.yaml"),
    ),
    (
        "templates/networkpolicy.yaml",
        include_str!("../templates/init/chart/templates/networkpolicy.yaml"),
    ),
    (
        "templates/poddisruptionbudget.yaml",
        include_str!("../templates/init/chart/templates/poddisruptionbudget.yaml"),
    ),
    (
        "templates/roles.yaml",
        include_str!("../templates/init/chart/templates/roles.yaml"),
    ),
    (
        "templates/service.yaml",
        include_str!("../templates/init/chart/templates/service.yaml"),
    ),
    (
        "templates/serviceaccount.yaml",
        include_str!("../templates/init/chart/templates/serviceaccount.yaml"),
    ),
    (
        "templates/servicemonitor.yaml",
        include_str!("../templates/init/chart/templates/servicemonitor.yaml"),
    ),
    (
        "templates/webhook-certificate.yaml",
        include_str!("../templates/init/chart/templates/webhook-certificate.yaml"),
    ),
    (
        "templates/webhook-configurations.yaml",
        include_str!("../templates/init/chart/templates/webhook-configurations.yaml"),
    ),
    (
        "templates/webhook-self-signed-rbac.yaml",
        include_str!("../templates/init/chart/templates/webhook-self-signed-rbac.yaml"),
    ),
    (
        "templates/webhook-service.yaml",
        include_str!("../templates/init/chart/templates/webhook-service.yaml"),
    ),
];

/// The chart's files that `update` leaves alone: `create webhook` turns a value on, and the
/// operator's `manifests` writes `files/`.
const CHART_NOT_OWNED: &[&str] = &["values.yaml", "files/crd.yaml", "files/rbac-rules.yaml"];

/// The project's other files, kept in `templates/init/`, which `update` rewrites; besides them
/// `init` writes `Cargo.toml` (from `Cargo.toml.template`: named Cargo.toml, its folder would
/// look like another package to cargo, which would leave the templates out of the published
/// crate).
const FILES: &[(&str, &str)] = &[
    ("README.md", include_str!("../templates/init/README.md")),
    ("Dockerfile", include_str!("../templates/init/Dockerfile")),
    (
        ".dockerignore",
        include_str!("../templates/init/dockerignore"),
    ),
    (".gitignore", include_str!("../templates/init/gitignore")),
    ("src/main.rs", include_str!("../templates/init/src/main.rs")),
    (
        "examples/control_plane.rs",
        include_str!("../templates/init/examples/control_plane.rs"),
    ),
    ("scripts/ci", include_str!("../templates/init/scripts/ci")),
    ("scripts/run", include_str!("../templates/init/scripts/run")),
];

/// The kubeward the project depends on: this tool's version, since the workspace releases its
/// crates together.
pub(crate) const KUBEWARD_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where the project's kubeward comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source<'a> {
    /// The crate registry.
    Registry,
    /// A clone's `framework/` folder (`--path`).
    Path(&'a Path),
    /// A folder of crates laid out as `cargo vendor --versioned-dirs` does, kubeward's packaged
    /// crates among them (`--vendored`), used in place of the registry.
    Vendored(&'a Path),
}

/// The plan of `init`: the project `folder` in `cwd` (`.`: `cwd` itself, which names it), for
/// `group`, with kubeward from `source`.
///
/// # Errors
/// A name or group Kubernetes or cargo would refuse, a folder that is not empty, a `--path`
/// folder without kubeward or a `--vendored` folder without this version of it.
pub(crate) fn plan(
    cwd: &Path,
    folder: &str,
    group: &str,
    source: Source<'_>,
) -> anyhow::Result<Plan> {
    let (root, name) = if folder == "." {
        let name = cwd.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        (cwd.to_owned(), name)
    } else {
        (cwd.join(folder), folder)
    };
    if !crate::names::is_project_name(name) {
        bail!(
            "{name:?} cannot name a project: use lower-case letters, digits and `-`, starting with a letter"
        );
    }
    if !crate::names::is_group(group) {
        bail!("{group:?} is not an API group: use a lower-case DNS name such as example.com");
    }
    if !is_new_or_empty(&root)? {
        bail!(
            "{} is not an empty folder: `cargo kubeward init` makes a project in a new or empty \
             folder and changed nothing",
            root.display()
        );
    }
    let (kubeward, kubeward_testing) = match source {
        Source::Registry | Source::Vendored(_) => (
            format!("kubeward = \"{KUBEWARD_VERSION}\""),
            format!("kubeward = {{ version = \"{KUBEWARD_VERSION}\", features = [\"testing\"] }}"),
        ),
        Source::Path(path) => {
            let path = absolute(cwd, path)?;
            let path = path.display();
            (
                format!("kubeward = {{ path = \"{path}\", version = \"{KUBEWARD_VERSION}\" }}"),
                format!(
                    "kubeward = {{ path = \"{path}\", version = \"{KUBEWARD_VERSION}\", features = [\"testing\"] }}"
                ),
            )
        }
    };
    let vendored = match source {
        Source::Vendored(folder) => Some(vendored_config(&vendored(cwd, folder)?)),
        Source::Registry | Source::Path(_) => None,
    };
    let mut project = Project {
        name: name.to_owned(),
        group: group.to_owned(),
        kubeward: Some(KUBEWARD_VERSION.to_owned()),
        ..Project::default()
    };
    let owned = owned_files(&project)?;
    project.files = owned
        .iter()
        .map(|(path, content)| (path.clone(), project::hash(content)))
        .collect();
    let crate_name = project.crate_name();
    let values = [
        ("name", name),
        ("crate", crate_name.as_str()),
        ("group", group),
        ("kubeward", kubeward.as_str()),
        ("kubeward_testing", kubeward_testing.as_str()),
    ];
    let mut plan = Plan::new(root);
    plan.create(project::FILE, project.render());
    if let Some(config) = vendored {
        plan.create(".cargo/config.toml", config);
    }
    plan.create(
        "Cargo.toml",
        render(
            include_str!("../templates/init/Cargo.toml.template"),
            &values,
        ),
    );
    for (path, content) in owned {
        plan.create(path, content);
    }
    plan.create("src/lib.rs", registry::lib_rs(&project));
    plan.create(
        "tests/integration/main.rs",
        registry::tests_main_rs(&project),
    );
    let chart = PathBuf::from("charts").join(name);
    for (path, template) in CHART
        .iter()
        .filter(|(path, _)| CHART_NOT_OWNED.contains(path))
    {
        plan.create(chart.join(path), render(template, &values));
    }
    Ok(plan)
}

/// The files of `project` that the tool writes whole and `update` rewrites, as this version
/// writes them (Rust formatted): the project's files in `FILES`, and the chart's but its values
/// and generated files.
///
/// # Errors
/// rustfmt refuses a template.
pub(crate) fn owned_files(project: &Project) -> anyhow::Result<Vec<(String, String)>> {
    let crate_name = project.crate_name();
    let values = [
        ("name", project.name.as_str()),
        ("crate", crate_name.as_str()),
        ("group", project.group.as_str()),
    ];
    let chart = CHART
        .iter()
        .filter(|(path, _)| !CHART_NOT_OWNED.contains(path))
        .map(|(path, template)| (format!("charts/{}/{path}", project.name), *template));
    FILES
        .iter()
        .map(|(path, template)| ((*path).to_owned(), *template))
        .chain(chart)
        .map(|(path, template)| {
            let content = render(template, &values);
            if Path::new(&path).extension().is_some_and(|e| e == "rs") {
                Ok((path, crate::format::rust(&content)?))
            } else {
                Ok((path, content))
            }
        })
        .collect()
}

/// What to run after `init` made the project in `folder` (`.`: the current folder).
pub(crate) fn next_steps(folder: &str) -> String {
    let cd = if folder == "." {
        String::new()
    } else {
        format!("  cd {folder}\n")
    };
    format!(
        "next:\n{cd}  cargo kubeward create api --version v1alpha1 --kind Memo   # a custom \
         resource and its controller\n  cargo test   # its tests, against a local control plane\n"
    )
}

/// Whether nothing is at `root`, or an empty folder.
fn is_new_or_empty(root: &Path) -> anyhow::Result<bool> {
    match std::fs::read_dir(root) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        // A file, or a folder that cannot be listed: not one to write a project into.
        Err(e) if root.exists() => {
            Err(e).with_context(|| format!("{} is not an empty folder", root.display()))
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", root.display())),
    }
}

/// `folder` made absolute against `cwd`, checked to hold this version of kubeward as `cargo vendor
/// --versioned-dirs` lays it out.
fn vendored(cwd: &Path, folder: &Path) -> anyhow::Result<PathBuf> {
    let folder = cwd.join(folder);
    let folder = folder
        .canonicalize()
        .with_context(|| format!("--vendored {}", folder.display()))?;
    let kubeward = format!("kubeward-{KUBEWARD_VERSION}");
    if !folder.join(&kubeward).join("Cargo.toml").is_file() {
        bail!(
            "--vendored {} holds no {kubeward}/Cargo.toml (crates laid out as `cargo vendor \
             --versioned-dirs` does, with kubeward's packaged crates: `scripts/package-check` in \
             kubeward's repository makes such a folder)",
            folder.display()
        );
    }
    Ok(folder)
}

/// The project's `.cargo/config.toml` that builds it against the crates in `folder` in place of
/// the registry.
fn vendored_config(folder: &Path) -> String {
    format!(
        "# Made by `cargo kubeward init --vendored`: this project builds against the crates in the\n\
         # folder below (kubeward's packaged crates and their dependencies) in place of the crate\n\
         # registry, to try kubeward before its release. Delete this file to use the registry.\n\
         [source.crates-io]\n\
         replace-with = \"kubeward-vendored\"\n\
         \n\
         [source.kubeward-vendored]\n\
         directory = \"{}\"\n",
        folder.display()
    )
}

/// `path` made absolute against `cwd`, checked to be kubeward's `framework/` folder.
fn absolute(cwd: &Path, path: &Path) -> anyhow::Result<PathBuf> {
    let path = cwd.join(path);
    let path = path
        .canonicalize()
        .with_context(|| format!("--path {}", path.display()))?;
    let manifest = std::fs::read_to_string(path.join("Cargo.toml")).unwrap_or_default();
    if !manifest.lines().any(|l| l.trim() == "name = \"kubeward\"") {
        bail!(
            "--path {} is not kubeward's framework folder (its Cargo.toml names no package kubeward)",
            path.display()
        );
    }
    Ok(path)
}
