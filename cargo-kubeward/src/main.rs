//! `cargo kubeward`: starts a kubeward operator and adds kinds and webhooks to it, the way
//! kubebuilder does for controller-runtime.
//!
//! ```text
//! cargo kubeward init memo-operator --group example.com
//! cd memo-operator
//! cargo kubeward create api --version v1alpha1 --kind Memo
//! cargo kubeward create webhook --kind Memo --defaulting --validation
//! cargo kubeward update      # after installing a newer cargo-kubeward
//! ```
//!
//! Every command checks everything before it writes anything: run twice, or outside a project it
//! made, it fails and changes nothing. `--dry-run` prints what it would write.

mod api;
mod format;
mod init;
mod names;
mod plan;
mod project;
mod regions;
mod registry;
mod template;
mod update;
mod webhook;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{ArgAction, Parser, Subcommand};

/// Starts a kubeward operator, and adds kinds and webhooks to it.
#[derive(Debug, Parser)]
#[command(name = "cargo kubeward", bin_name = "cargo kubeward", version)]
struct Cli {
    /// Print what would be written, and write nothing.
    #[arg(long, global = true)]
    dry_run: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// A new operator project in the folder NAME: main, chart, Dockerfile, CI script, tests.
    Init {
        /// The project's name (crate, binary and chart) and its folder, new or empty; `.` is the
        /// current folder, empty, and the project takes its name.
        name: String,
        /// The API group of its custom resources.
        #[arg(long, alias = "domain")]
        group: String,
        /// Depend on a kubeward clone (its `framework/` folder) instead of the released crates.
        #[arg(long)]
        path: Option<PathBuf>,
        /// Build against the crates in this folder in place of the crate registry, to try a
        /// kubeward before its release: kubeward's packaged crates and their dependencies, laid
        /// out as `cargo vendor --versioned-dirs` does (kubeward's `scripts/package-check` makes
        /// one). Writes `.cargo/config.toml`; delete it to use the registry.
        #[arg(long, value_name = "FOLDER", conflicts_with = "path")]
        vendored: Option<PathBuf>,
    },
    /// Adds to the project in the current folder.
    #[command(subcommand)]
    Create(Create),
    /// Rewrites the files this tool owns in the project in the current folder as this version
    /// writes them: those `init` wrote whole that you have not changed (the others are listed,
    /// and `--dry-run` shows this version's), and the marked regions of `src/lib.rs` and
    /// `tests/integration/main.rs`. Records this version in `KUBEWARD`.
    Update,
}

#[derive(Debug, Subcommand)]
enum Create {
    /// A custom resource and its controller, or a controller of an existing kind.
    Api {
        /// The API group: the project's own for custom resources; for an existing kind its own
        /// (`apps`, `core`, ...).
        #[arg(long)]
        group: Option<String>,
        /// The API version (`v1alpha1`).
        #[arg(long)]
        version: String,
        /// The kind (`Memo`).
        #[arg(long)]
        kind: String,
        /// Make a custom resource; `--resource=false` for a kind the API server serves.
        #[arg(long, action = ArgAction::Set, default_value_t = true, num_args = 0..=1, default_missing_value = "true")]
        resource: bool,
        /// Make a controller.
        #[arg(long, action = ArgAction::Set, default_value_t = true, num_args = 0..=1, default_missing_value = "true")]
        controller: bool,
    },
    /// Admission webhooks of a custom resource.
    Webhook {
        /// The custom resource's kind.
        #[arg(long)]
        kind: String,
        /// A defaulter (a mutating webhook).
        #[arg(long)]
        defaulting: bool,
        /// A validator (a validating webhook).
        #[arg(long)]
        validation: bool,
        /// The conversion webhook: registers the converter between the kind's versions (made by
        /// `create api` of a second version) and serves every version. Needs a second version.
        #[arg(long)]
        conversion: bool,
    },
}

fn main() -> ExitCode {
    let result = std::env::current_dir()
        .map_err(anyhow::Error::from)
        .and_then(|cwd| run(std::env::args_os(), &cwd, &mut std::io::stdout().lock()));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the command line `args` (cargo passes `kubeward` first) in `cwd`, reporting on `out`.
fn run(
    args: impl IntoIterator<Item = OsString>,
    cwd: &Path,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    if args.get(1).is_some_and(|a| a == "kubeward") {
        args.remove(1);
    }
    let cli = Cli::parse_from(args);
    let plan = match &cli.command {
        Command::Init {
            name,
            group,
            path,
            vendored,
        } => {
            let source = match (path, vendored) {
                (Some(path), _) => init::Source::Path(path),
                (None, Some(folder)) => init::Source::Vendored(folder),
                (None, None) => init::Source::Registry,
            };
            init::plan(cwd, name, group, source)?
        }
        Command::Update => update::plan(cwd)?,
        Command::Create(Create::Api {
            group,
            version,
            kind,
            resource,
            controller,
        }) => api::plan(
            cwd,
            &api::Request {
                group: group.as_deref(),
                version,
                kind,
                resource: *resource,
                controller: *controller,
            },
        )?,
        Command::Create(Create::Webhook {
            kind,
            defaulting,
            validation,
            conversion,
        }) => webhook::plan(
            cwd,
            &webhook::Request {
                kind,
                defaulting: *defaulting,
                validation: *validation,
                conversion: *conversion,
            },
        )?,
    };
    if cli.dry_run {
        plan.describe(out)
    } else {
        plan.write(out)?;
        match &cli.command {
            Command::Init { name, .. } => out.write_all(init::next_steps(name).as_bytes())?,
            Command::Update if plan.writes_nothing() => writeln!(
                out,
                "nothing to update: the files cargo kubeward owns are as {} writes them, or kept",
                init::KUBEWARD_VERSION
            )?,
            Command::Update => writeln!(
                out,
                "next: review the changes (`git diff`), then `cargo build` and `scripts/ci`"
            )?,
            Command::Create(_) => writeln!(
                out,
                "next: `cargo run -- manifests` rewrites the chart's CRDs and RBAC rules"
            )?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
